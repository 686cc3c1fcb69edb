#!/usr/bin/env bash
# Sessions written by chainlog's own writer (`append`, `fork`, `branch`, `title`, `tag`) into
# the claude dir $1, so the real client can resume them (issue 12: what the writer writes must
# resume in Claude Code exactly as `chainlog resume --format api` says). Uses $CHAINLOG.
set -euo pipefail
claude=$1
index=$(mktemp -d)
cl() { "$CHAINLOG" --claude-dir "$claude" --index-dir "$index" "$@"; }
project=/tmp/chainlog-writer-project
sid=7e57c0de-0000-4000-8000-0000000000a1

cl append "$sid" --project "$project" >/dev/null <<'JSONL'
{"type":"user","message":{"role":"user","content":"list the files"}}
{"type":"assistant","message":{"id":"msg_w1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_w1","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_w1","content":"a.txt b.txt"}]}}
{"type":"assistant","message":{"id":"msg_w2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"There are two files: a.txt and b.txt."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":9}}}
JSONL
cl title "$sid" "Writer: list files" >/dev/null
cl tag "$sid" ci >/dev/null

# A second turn appended later, as a harness resuming its own session would.
cl append "$sid" >/dev/null <<'JSONL'
{"type":"user","message":{"role":"user","content":"and their sizes?"}}
{"type":"assistant","message":{"id":"msg_w3","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Sizes need wc.","signature":"c2ln"},{"type":"text","text":"Both are empty."}],"stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":7}}}
JSONL

# A fork of the whole view, continued on its own.
fork=$(cl fork "$sid" | tail -1)
cl append "$fork" >/dev/null <<'JSONL'
{"type":"user","message":{"role":"user","content":"now in the fork: anything else?"}}
{"type":"assistant","message":{"id":"msg_w4","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Nothing else."}],"stop_reason":"end_turn","usage":{"input_tokens":40,"output_tokens":3}}}
JSONL

# A branch (a named copy), and a fork cut after the first answer.
cl branch "$sid" "sizes branch" >/dev/null
first_answer=$(cl resume "$sid" --format uuids | sed -n 4p)
cl fork "$sid" --at "$first_answer" >/dev/null
rm -rf "$index"
find "$claude/projects" -name '*.jsonl' | wc -l
