//! Lists the sessions of a claude dir and prints the last 3 messages of the newest one.
//!
//! `cargo run -p last-messages -- [CLAUDE_DIR [INDEX_DIR]]` (default: the vendored
//! `fixtures/real/claude-code-viewer`, and an index in the system's temporary folder).

use chainlog::{Block, ListOptions, Message, ResumeOptions, Store};

fn main() -> Result<(), chainlog::Error> {
    let mut args = std::env::args_os().skip(1);
    let claude_dir = args.next().map_or_else(
        || {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../fixtures/real/claude-code-viewer"
            )
            .into()
        },
        std::path::PathBuf::from,
    );
    let index_dir = args
        .next()
        .map_or_else(|| std::env::temp_dir().join("chainlog-example"), Into::into);

    let store = Store::open(claude_dir, index_dir)?;
    let listing = store.sessions(&ListOptions::all())?; // newest first
    for s in &listing.sessions {
        println!(
            "{}  {:>4} messages  {}",
            s.session_id, s.message_count, s.title
        );
    }
    let Some(newest) = listing.sessions.iter().find(|s| s.message_count > 0) else {
        println!("no sessions");
        return Ok(());
    };
    let conversation = store.resume(&newest.session_id, &ResumeOptions::default())?;
    let messages: Vec<_> = conversation.messages().collect();
    println!("\nthe last 3 messages of {}:", newest.session_id);
    for m in &messages[messages.len().saturating_sub(3)..] {
        let short: String = shown(m).chars().take(120).collect();
        println!("[{}] {}", m.role.as_str(), short.replace('\n', " "));
    }
    Ok(())
}

/// The message's text, else what its blocks are (a tool call, a tool's answer).
fn shown(m: &Message) -> String {
    let text = m.text();
    if !text.is_empty() {
        return text;
    }
    let parts: Vec<String> = m
        .blocks
        .iter()
        .map(|b| match b {
            Block::ToolUse { name, .. } => format!("(calls {name})"),
            Block::ToolResult { text, .. } => format!("(tool result) {text}"),
            Block::Thinking(_) => "(thinking)".into(),
            Block::Image { .. } => "(image)".into(),
            Block::Text(t) => t.clone(),
            Block::Other { kind, .. } => format!("({kind})"),
        })
        .collect();
    parts.join(" ")
}
