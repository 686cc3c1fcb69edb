//! A query as the search index can answer it, and the exact check of what it answered.
//!
//! The index keeps no positions (they were half of its size): a phrase — `"cargo test"`, or
//! a word the tokenizer cuts in several (`main.rs`, `rsync -av`'s `-av` aside) — cannot be
//! answered by it. The index is asked a *wider* query instead ([`Relaxed`]): every phrase
//! becomes the conjunction of its words, and an exclusion (`-x`) that holds a phrase is left
//! out. What it finds is then checked with the user's own query by tantivy itself, on a
//! small index in memory holding just the found messages' texts with positions
//! ([`Relaxed::keep`]): the same parser, the same tokenizer, the same phrase and slop rules,
//! so a phrase matches exactly what it matched when the index kept positions.

use tantivy::collector::DocSetCollector;
use tantivy::query::{Query, QueryParser};
use tantivy::query_grammar::{
    Delimiter, Occur, UserInputAst, UserInputLeaf, UserInputLiteral, parse_query_lenient,
};
use tantivy::schema::{FAST, Field, Schema, TEXT};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, doc};

/// The query the index is asked, and whether its answers must be checked.
pub(super) struct Relaxed {
    /// What the index is asked: the user's query, phrases widened.
    pub query: Box<dyn Query>,
    /// The user's query, when `query` is wider than it (it held a phrase).
    exact: Option<String>,
}

/// Whether `ast` holds a literal of the text field that the tokenizer cuts in several words.
fn has_phrase(ast: &UserInputAst, words: &mut TextAnalyzer) -> bool {
    match ast {
        UserInputAst::Clause(items) => items.iter().any(|(_, a)| has_phrase(a, words)),
        UserInputAst::Boost(a, _) => has_phrase(a, words),
        UserInputAst::Leaf(leaf) => match leaf.as_ref() {
            UserInputLeaf::Literal(l) => tokens(l, words).is_some_and(|t| t.len() > 1),
            _ => false,
        },
    }
}

/// The words of a literal of the default (text) field; `None` for another field's.
fn tokens(l: &UserInputLiteral, words: &mut TextAnalyzer) -> Option<Vec<String>> {
    if l.field_name.as_deref().is_some_and(|f| f != "text") {
        return None;
    }
    let mut out = Vec::new();
    let mut stream = words.token_stream(&l.phrase);
    stream.process(&mut |t| out.push(t.text.clone()));
    Some(out)
}

/// `ast` widened: each phrase is the conjunction of its words (a phrase prefix without its
/// last, partial word), and an exclusion holding a phrase is dropped. Every message that
/// matches `ast` matches the result.
fn widen(ast: UserInputAst, words: &mut TextAnalyzer) -> UserInputAst {
    match ast {
        UserInputAst::Clause(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for (occur, a) in items {
                if occur != Some(Occur::MustNot) || !has_phrase(&a, words) {
                    kept.push((occur, widen(a, words)));
                }
            }
            UserInputAst::Clause(kept)
        }
        UserInputAst::Boost(a, boost) => UserInputAst::Boost(Box::new(widen(*a, words)), boost),
        UserInputAst::Leaf(leaf) => match *leaf {
            UserInputLeaf::Literal(l) => match tokens(&l, words) {
                Some(mut t) if t.len() > 1 => {
                    if l.prefix {
                        t.pop();
                    }
                    UserInputAst::Clause(
                        t.into_iter()
                            .map(|word| {
                                let leaf = UserInputLeaf::Literal(UserInputLiteral {
                                    field_name: l.field_name.clone(),
                                    phrase: word,
                                    delimiter: Delimiter::None,
                                    slop: 0,
                                    prefix: false,
                                });
                                (Some(Occur::Must), UserInputAst::Leaf(Box::new(leaf)))
                            })
                            .collect(),
                    )
                }
                _ => UserInputAst::Leaf(Box::new(UserInputLeaf::Literal(l))),
            },
            other => UserInputAst::Leaf(Box::new(other)),
        },
    }
}

/// A parser of `index` reading `text` as the default field, words joined by AND.
fn parser(index: &Index, text: Field) -> QueryParser {
    let mut p = QueryParser::for_index(index, vec![text]);
    p.set_conjunction_by_default();
    p
}

impl Relaxed {
    /// Parses `query` leniently (a stray quote or operator is read as text, never an error)
    /// for the `text` field of `index`, widened when it holds a phrase.
    pub fn parse(index: &Index, text: Field, query: &str) -> Relaxed {
        let p = parser(index, text);
        let Ok(mut words) = index.tokenizer_for_field(text) else {
            return Relaxed {
                query: p.parse_query_lenient(query).0,
                exact: None,
            };
        };
        let (ast, _) = parse_query_lenient(query);
        if !has_phrase(&ast, &mut words) {
            return Relaxed {
                query: p.parse_query_lenient(query).0,
                exact: None,
            };
        }
        let wide = match widen(ast, &mut words) {
            // Only exclusions were left, all dropped: everything may match.
            UserInputAst::Clause(items) if items.is_empty() => {
                UserInputAst::Leaf(Box::new(UserInputLeaf::All))
            }
            wide => wide,
        };
        Relaxed {
            query: p.build_query_from_user_input_ast_lenient(wide).0,
            exact: Some(query.to_owned()),
        }
    }

    /// Whether the index's answers must be checked with [`Relaxed::keep`].
    pub fn widened(&self) -> bool {
        self.exact.is_some()
    }

    /// Which of `texts` (the searchable texts of messages the index found) match the user's
    /// query itself: all of them unless it was widened; else as tantivy answers it on an index
    /// in memory of just these texts, with positions. `None` when that index fails (or
    /// panics: tantivy's phrase scorer asserts on some exclusions).
    pub fn keep(&self, texts: &[&str]) -> Option<Vec<bool>> {
        let Some(query) = &self.exact else {
            return Some(vec![true; texts.len()]);
        };
        std::panic::catch_unwind(|| Self::matching(query, texts)).ok()?
    }

    fn matching(query: &str, texts: &[&str]) -> Option<Vec<bool>> {
        let mut schema = Schema::builder();
        let text = schema.add_text_field("text", TEXT);
        let n = schema.add_u64_field("n", FAST);
        let index = Index::create_in_ram(schema.build());
        let mut w = index.writer_with_num_threads(1, 15_000_000).ok()?;
        for (i, t) in texts.iter().enumerate() {
            w.add_document(doc!(text => *t, n => i as u64)).ok()?;
        }
        w.commit().ok()?;
        let searcher = index.reader().ok()?.searcher();
        let q = parser(&index, text).parse_query_lenient(query).0;
        let found = searcher.search(&q, &DocSetCollector).ok()?;
        let mut keep = vec![false; texts.len()];
        for addr in found {
            let i = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("n")
                .ok()?
                .first(addr.doc_id)?;
            *keep.get_mut(usize::try_from(i).ok()?)? = true;
        }
        Some(keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::IndexRecordOption;
    use tantivy::schema::TextFieldIndexing;
    use tantivy::schema::TextOptions;

    /// The messages a query finds on an index without positions (widened, then checked) are
    /// those it finds on one with positions.
    #[test]
    fn a_widened_query_checked_finds_what_positions_find() {
        let texts = [
            "cargo test passed",
            "test cargo later",
            "src/main.rs changed",
            "main and src and rs",
            "rsync -av build/ staging:/srv/app",
            "the build of the app",
            "run cargo then test it",
        ];
        let index_of = |positions: bool| {
            let mut b = Schema::builder();
            let record = if positions {
                IndexRecordOption::WithFreqsAndPositions
            } else {
                IndexRecordOption::WithFreqs
            };
            let text = b.add_text_field(
                "text",
                TextOptions::default().set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer("default")
                        .set_index_option(record),
                ),
            );
            let index = Index::create_in_ram(b.build());
            let mut w = index.writer_with_num_threads(1, 15_000_000).unwrap();
            for t in texts {
                w.add_document(doc!(text => t)).unwrap();
            }
            w.commit().unwrap();
            (index, text)
        };
        let (exact, text) = index_of(true);
        let (plain, _) = index_of(false);
        let found = |index: &Index, q: &dyn Query| -> Vec<u32> {
            let mut v: Vec<u32> = index
                .reader()
                .unwrap()
                .searcher()
                .search(q, &DocSetCollector)
                .unwrap()
                .into_iter()
                .map(|a| a.doc_id)
                .collect();
            v.sort_unstable();
            v
        };
        for q in [
            "\"cargo test\"",
            "src/main.rs",
            "cargo -\"cargo test\"",
            "\"cargo test\" OR app",
            // (`-"cargo test"` alone, or `build -(app "the app")`, trip a debug assertion in
            // tantivy's phrase scorer under an exclusion, with or without positions.)
            "\"cargo test\"~3",
            "rsync",
            "\"build of\"",
        ] {
            let want = found(&exact, &*parser(&exact, text).parse_query_lenient(q).0);
            let r = Relaxed::parse(&plain, text, q);
            let wide = found(&plain, &*r.query);
            let keep = r.keep(&wide.iter().map(|&d| texts[d as usize]).collect::<Vec<_>>());
            let got: Vec<u32> = wide
                .iter()
                .zip(keep.unwrap())
                .filter(|(_, k)| *k)
                .map(|(d, _)| *d)
                .collect();
            assert_eq!(got, want, "{q}");
            assert_eq!(r.widened(), q.contains('"') || q.contains('/'), "{q}");
        }
    }
}
