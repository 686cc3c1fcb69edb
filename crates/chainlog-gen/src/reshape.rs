//! Events that reshape the conversation tree: snips, compactions (with preserved segments),
//! rewinds, and legacy progress lines.
//!
//! Each one edits the expected view exactly as format.md §A5 will (see the module docs of
//! [`super`]).

use std::io::{self, Write};

use serde_json::{Value, json};

use super::lines::{self, Obj, UserBody, UserFlags};
use super::session::{LateProgress, Node, Session};
use super::text;

impl<W: Write> Session<'_, W> {
    /// View indices of the prompts after the last compaction.
    pub(super) fn prompts(&self) -> Vec<usize> {
        (self.floor..self.view.len())
            .filter(|&i| self.view[i].prompt)
            .collect()
    }

    /// Snip one to two whole turns (never the current one) of the current view.
    pub(super) fn snip(&mut self) -> io::Result<bool> {
        let prompts = self.prompts();
        if prompts.len() < 2 {
            return Ok(false);
        }
        for _ in 0..8 {
            let a = self.g.below(prompts.len() - 1);
            let b = self.g.between(a + 1, (a + 2).min(prompts.len() - 1));
            let range = prompts[a]..prompts[b];
            let run = &self.view[range.clone()];
            // Progress lines are not listed, and a re-pointed anchor child would make the answer
            // depend on the order of steps 5 and 6: keep both out of snips.
            let anchor = self.seg_anchor.as_deref();
            if run
                .iter()
                .any(|n| n.via_progress || (anchor.is_some() && n.raw_parent.as_deref() == anchor))
            {
                continue;
            }
            let removed: Vec<Value> = run.iter().map(|n| Value::from(n.uuid.as_str())).collect();
            let uuid = self.g.uuid();
            let ts = self.tick(5, 500);
            let v = lines::message(
                &self.env(),
                self.tip.as_deref(),
                None,
                None,
                lines::system_body(
                    "snip_boundary",
                    Some("Conversation snipped"),
                    true,
                    &uuid,
                    &ts,
                    Obj::new().set("snipMetadata", json!({"removedUuids": removed})),
                ),
            );
            self.emit(&v, false)?;
            self.advance(uuid, false);
            self.view.drain(range);
            return Ok(true);
        }
        Ok(false)
    }

    /// The start of a preserved segment: a suffix of the current view in which every element
    /// but the first has the previous element as its raw parent.
    fn segment_start(&mut self) -> usize {
        let n = self.view.len();
        let max = self.g.between(1, 12);
        let mut start = n - 1;
        while start > self.floor
            && n - start < max
            && self.view[start].raw_parent.as_deref() == Some(self.view[start - 1].uuid.as_str())
        {
            start -= 1;
        }
        if self.g.chance(0.6)
            && let Some(p) = (start..n).find(|&i| self.view[i].prompt)
        {
            return p;
        }
        start
    }

    /// A compact boundary and its summary; the view restarts there.
    pub(super) fn compact(&mut self) -> io::Result<bool> {
        // At least one turn since the last compaction (three unless forced by size), so snips
        // and rewinds have room.
        let min_turns = if self.o.compact_every_bytes.is_some() {
            1
        } else {
            2
        };
        if self.prompts().len() < min_turns || self.tip_is_progress {
            return Ok(false);
        }
        let want_seg = self.o.preserved_segments && (self.segments_done == 0 || self.g.chance(0.5));
        let seg_start = if want_seg {
            Some(self.segment_start())
        } else {
            None
        };
        let tail = self.view[self.view.len() - 1].uuid.clone();
        let boundary = self.g.uuid();
        let summary = self.g.uuid();
        let trigger = if self.g.chance(0.7) { "auto" } else { "manual" };
        let mut meta = Obj::new()
            .set("trigger", trigger)
            .set("preTokens", self.g.range(100_000, 190_000));
        if let Some(start) = seg_start {
            meta = meta.set(
                "preservedSegment",
                json!({"headUuid": self.view[start].uuid, "anchorUuid": summary, "tailUuid": tail}),
            );
        }
        let ts = self.tick(1000, 30_000);
        let v = lines::message(
            &self.env(),
            None,
            Some(&tail),
            None,
            lines::system_body(
                "compact_boundary",
                Some("Conversation compacted"),
                false,
                &boundary,
                &ts,
                Obj::new().set("compactMetadata", meta.value()),
            ),
        );
        self.emit(&v, false)?;
        self.write_compact_summary(&boundary, &summary)?;
        let kept: Vec<Node> = match seg_start {
            Some(start) => self.view.drain(start..).collect(),
            None => Vec::new(),
        };
        self.view.clear();
        self.view.push(Node {
            uuid: boundary.clone(),
            raw_parent: None,
            prompt: false,
            via_progress: false,
        });
        self.view.push(Node {
            uuid: summary.clone(),
            raw_parent: Some(boundary),
            prompt: false,
            via_progress: false,
        });
        self.view.extend(kept);
        self.floor = self.view.len();
        self.tip_is_progress = false;
        if seg_start.is_some() {
            self.segments_done += 1;
            // The next message hangs off the anchor (the loader re-points it to the tail) or
            // off the tail directly.
            self.tip = Some(if self.g.chance(0.5) {
                summary.clone()
            } else {
                tail
            });
            self.seg_anchor = Some(summary);
        } else {
            self.tip = Some(summary);
            self.seg_anchor = None;
        }
        Ok(true)
    }

    /// Rewind: the next prompt hangs off the tip before one of the last three prompts.
    pub(super) fn rewind(&mut self) -> bool {
        let prompts = self.prompts();
        if prompts.is_empty() {
            return false;
        }
        let k = prompts.len();
        let i = prompts[k - 1 - self.g.below(k.min(3))];
        self.view.truncate(i);
        self.tip = self.view.last().map(|n| n.uuid.clone());
        self.tip_is_progress = false;
        true
    }

    /// Legacy progress lines between a tool result and the next request.
    pub(super) fn maybe_progress(&mut self) -> io::Result<()> {
        if !self.o.legacy_progress {
            return Ok(());
        }
        let owed =
            !(self.progress_done[0] && self.progress_done[1]) && self.bytes >= self.o.target_bytes;
        let due = self.s_progress.due(self.bytes, self.o.target_bytes) || owed;
        if !due && !self.g.chance(0.05) {
            return Ok(());
        }
        if due {
            self.s_progress.done(&mut self.g, self.bytes);
        }
        let late = if !self.progress_done[0] {
            false
        } else if !self.progress_done[1] {
            true
        } else {
            self.g.chance(0.3)
        };
        self.progress_done[usize::from(late)] = true;
        let tool_use_id = self
            .last_tool_id
            .clone()
            .unwrap_or_else(|| self.g.tool_use_id());
        let Some(mut parent) = self.tip.clone() else {
            return Ok(());
        };
        if late {
            let uuid = self.g.uuid();
            self.late_progress = Some(LateProgress {
                uuid: uuid.clone(),
                parent,
                tool_use_id,
            });
            parent = uuid;
        } else {
            let count = if self.g.chance(0.3) { 2 } else { 1 };
            for _ in 0..count {
                let uuid = self.g.uuid();
                self.write_progress(&uuid, &parent, &tool_use_id)?;
                parent = uuid;
            }
        }
        self.tip = Some(parent);
        self.tip_is_progress = true;
        Ok(())
    }

    /// The compact-summary user line after a boundary.
    fn write_compact_summary(&mut self, boundary: &str, summary: &str) -> io::Result<()> {
        let body = format!(
            "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n\nAnalysis:\n{}\n\nSummary:\n1. Primary Request and Intent: {}\n2. Key Technical Concepts: {}\n3. Files and Code Sections: {}\n4. Pending Tasks: {}.",
            text::thinking(&mut self.g),
            self.last_prompt.clone().unwrap_or_default(),
            text::sentence(&mut self.g, 10, 40),
            self.pool.window(&mut self.g, 600).0,
            text::sentence(&mut self.g, 5, 20),
        );
        let sts = self.tick(5, 50);
        let v = lines::message(
            &self.env(),
            Some(boundary),
            None,
            None,
            lines::user_body(UserBody {
                content: Value::from(body),
                flags: UserFlags {
                    is_meta: false,
                    compact_summary: true,
                    transcript_only: true,
                },
                uuid: summary,
                timestamp: &sts,
                tool_use_result: None,
                source_tool_assistant: None,
                permission_mode: None,
            }),
        );
        self.emit(&v, false)
    }
}
