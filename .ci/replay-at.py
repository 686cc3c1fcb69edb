#!/usr/bin/env python3
"""Resume sessions with the real client at other points of their chain, and record what it sends.

    replay-at.py CLAUDE_DIR OUT_DIR [--cuts N | --at-file F] [--only SID...]   (uses $CHAINLOG, $CLAUDE_BIN)

The kit's replay.py resumes every main transcript of CLAUDE_DIR at its leaf. This script runs
`claude -p --resume SID --resume-session-at UUID PING` instead, for up to N cut points per session
on the resume view chainlog gives (`chainlog resume PATH --format jsonl`): a user prompt and an
assistant line in the middle, a tool-result line, a thinking line and the line before the leaf.
`--at-file F` names the cut points instead (`<session id> <uuid>` per line, as
fixtures/client/cuts.txt lists the shapes' cuts). Each run is written to OUT_DIR/<sid>@<uuid>.json in the shape of the kit's expected files
(`args` holds `--resume-session-at UUID`), so tests/it/conformance.rs compares it with
`chainlog resume PATH --at UUID --format api`. A cut the client refuses (`request: null`) must be
refused by chainlog too. Uses the kit's lib (../shared/conformance/lib) and never writes
CLAUDE_DIR.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
kit = os.environ.get("CHAINLOG_CONFORMANCE_KIT", os.path.join(here, "..", "..", "shared", "conformance"))
sys.path.insert(0, os.path.join(kit, "lib"))
import client  # noqa: E402


def view(chainlog, path):
    """The entries of chainlog's resume view of `path` (user/assistant messages only)."""
    out = subprocess.run([chainlog, "--index-dir", tempfile.gettempdir() + "/chainlog-replay-at-index",
                          "resume", path, "--format", "jsonl"], capture_output=True, check=False)
    entries = []
    for line in out.stdout.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("type") in ("user", "assistant") and e.get("uuid"):
            entries.append(e)
    return entries


def kind(e):
    c = (e.get("message") or {}).get("content")
    blocks = c if isinstance(c, list) else [{"type": "text"}]
    types = {b.get("type") for b in blocks if isinstance(b, dict)}
    if e["type"] == "user":
        return "result" if types == {"tool_result"} else "prompt"
    return "thinking" if types <= {"thinking", "redacted_thinking"} else "reply"


def cuts(entries, n):
    """Up to n uuids, the leaf excluded (the plain replay covers it)."""
    body = entries[:-1]
    if not body:
        return []
    picks = []

    def first(pred, start):
        for e in body[start:] + body[:start]:
            if pred(e) and e["uuid"] not in picks:
                return e["uuid"]
        return None

    mid = len(body) // 2
    for pred, start in ((lambda e: kind(e) == "prompt", mid), (lambda e: kind(e) == "reply", len(body) // 3),
                        (lambda e: kind(e) == "result", mid), (lambda e: kind(e) == "thinking", 0),
                        (lambda e: True, len(body) - 1)):
        u = first(pred, start)
        if u:
            picks.append(u)
    return picks[:n]


def replay_at(binary, mock, src, sid, at, timeout, fork=False):
    tmp = tempfile.mkdtemp(prefix="chainlog-replay-at-")
    try:
        home, config, cwd, tmpdir = (os.path.join(tmp, d) for d in ("home", "claude", "cwd", "tmp"))
        for d in (home, cwd, tmpdir):
            os.makedirs(d)
        cwd = os.path.realpath(cwd)
        key = client.project_key(cwd)
        project = os.path.join(config, "projects", key)
        os.makedirs(project, mode=0o700)
        shutil.copyfile(src, os.path.join(project, sid + ".jsonl"))
        side = src[:-len(".jsonl")]
        if os.path.isdir(side):
            client.copy_tree(side, os.path.join(project, sid))
        before = client.session_files(os.path.join(config, "projects"))
        offset = mock.offset()
        argv = ["-p", "--resume", sid] + (["--fork-session"] if fork else []) + [
            "--resume-session-at", at, "PING", "--output-format", "json"]
        res = client.run_claude(binary, argv, cwd, client.offline_env(mock.port, config, home, tmpdir), timeout)
        body, req = client.conversation_request(mock.requests_since(offset))
        written = client.changes(os.path.join(config, "projects"), before)
        appended = written.pop(sid, (None, []))[1]
        return {
            "args": ["--resume", sid] + (["--fork-session"] if fork else []) + ["--resume-session-at", at],
            "argv": argv, "prompt": "PING",
            "cwd": cwd, "cwd_key": key, "session_id": sid,
            "result_session_id": (res["result"] or {}).get("session_id"), "rc": res["rc"],
            "killed": res["killed"], "request": req, "model": body.get("model") if body else None,
            "messages": body.get("messages") if body else None, "appended": appended,
            "appended_other": {s: lines for s, (_, lines) in sorted(written.items())},
        }, res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("claude_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--cuts", type=int, default=3)
    ap.add_argument("--first", type=int, default=0, help="skip the first N cut points of each session")
    ap.add_argument("--only", nargs="+", metavar="SID")
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--at-file", help="cut at these points only: `<session id> <uuid>` per line")
    ap.add_argument("--fork", action="store_true", help="also --fork-session (the cut goes to a new session)")
    a = ap.parse_args()
    chainlog = os.environ.get("CHAINLOG", "target/debug/chainlog")
    binary = client.find_claude(None)
    client.check_version(binary)
    claude_dir = os.path.abspath(a.claude_dir)
    os.makedirs(a.out_dir, exist_ok=True)
    mock_dir = tempfile.mkdtemp(prefix="chainlog-replay-at-mock-")
    mock = client.Mock(mock_dir, time_limit=3 * 3600)
    chosen = {}
    if a.at_file:
        with open(a.at_file) as f:
            for line in f:
                if line.strip():
                    sid, at = line.split()
                    chosen.setdefault(sid, []).append(at)
    done, refused, failed = 0, 0, 0
    try:
        for path in sorted(client.session_files(os.path.join(claude_dir, "projects"))):
            sid = os.path.basename(path)[:-6]
            if (a.only and sid not in a.only) or not client.has_conversation(path):
                continue
            ats = chosen.get(sid, []) if a.at_file else cuts(view(chainlog, path), a.first + a.cuts)[a.first:]
            for at in ats:
                rec, res = replay_at(binary, mock, path, sid, at, a.timeout, a.fork)
                out = {"scenario": None, "run": None, "source": os.path.relpath(path, claude_dir)}
                out.update(rec)
                suffix = "-fork" if a.fork else ""
                client.write_json(os.path.join(a.out_dir, f"{sid}@{at}{suffix}.json"), out)
                status = "ok" if rec["messages"] is not None else "refused"
                if res["killed"]:
                    status, failed = "FAILED", failed + 1
                refused += status == "refused"
                done += 1
                print(f"  {status:7} {sid} at {at}: rc={res['rc']} {res['seconds']:.1f}s", flush=True)
    finally:
        mock.close()
        shutil.rmtree(mock_dir, ignore_errors=True)
    print(f"resumed {done} cuts ({refused} refused by the client), {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
