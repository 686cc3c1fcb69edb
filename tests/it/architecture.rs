//! The house rules of the source tree (issue #30), checked over the code itself:
//!
//! - no import cycle between the files of the library, the command or the generator;
//! - no file of the library imports from a layer above its own (the layers of ARCHITECTURE.md).
//!
//! Each file is parsed with `syn`; every path it names through `crate::`, `super::`, `self::`
//! or a child module (in `use` items and in code alike, `#[cfg(test)]` items left out) is
//! followed through re-exports to the file that defines the item. A file's use of its own
//! ancestors' items (`super::Thing` defined in a `mod.rs` above) is how Rust nests modules and
//! is not an edge; everything else is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module path inside its crate (`["index", "ingest"]`); the crate root is empty.
type Module = Vec<String>;

/// One parsed file: its module, the modules it declares, its `use` names and the paths it names.
struct File {
    source: PathBuf,
    /// Child modules declared with `mod x;` (their files) or inline (`mod x { … }`).
    children: BTreeSet<String>,
    /// `use` bindings: local name → the path it stands for, as written (`crate::a::B`).
    uses: BTreeMap<String, Vec<String>>,
    /// Every path the file names (use trees expanded), as written.
    paths: Vec<Vec<String>>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test") || m.path().is_ident("doctest"))
    })
}

/// Collects paths from items, skipping test-only ones.
#[derive(Default)]
struct Collector {
    children: BTreeSet<String>,
    uses: BTreeMap<String, Vec<String>>,
    paths: Vec<Vec<String>>,
    /// Depth inside inline modules (their `use`s bind names in that module, not the file's).
    inline: usize,
}

impl Collector {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut full = prefix.clone();
                if name != "self" {
                    full.push(name.clone());
                }
                let bound = if name == "self" {
                    prefix.last().cloned()
                } else {
                    Some(name)
                };
                if let (Some(bound), 0) = (bound, self.inline) {
                    self.uses.insert(bound, full.clone());
                }
                self.paths.push(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                if self.inline == 0 {
                    self.uses.insert(r.rename.to_string(), full.clone());
                }
                self.paths.push(full);
            }
            syn::UseTree::Glob(_) => self.paths.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test_only(attrs) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if self.inline == 0 {
            self.children.insert(m.ident.to_string());
        }
        if let Some((_, items)) = &m.content {
            self.inline += 1;
            for item in items {
                self.visit_item(item);
            }
            self.inline -= 1;
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            self.paths
                .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro calls (`matches!(x, crate::a::B)`, `format!`) are tokens: read
        // every `a::b::c` run from them.
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for tt in m.tokens.clone() {
            match tt {
                proc_macro2::TokenTree::Ident(i) if colons == 2 || run.is_empty() => {
                    if colons != 2 && run.len() > 1 {
                        self.paths.push(std::mem::take(&mut run));
                    }
                    if colons != 2 {
                        run.clear();
                    }
                    run.push(i.to_string());
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => {
                    colons += 1;
                }
                _ => {
                    if run.len() > 1 {
                        self.paths.push(std::mem::take(&mut run));
                    }
                    run.clear();
                    colons = 0;
                }
            }
        }
        if run.len() > 1 {
            self.paths.push(run);
        }
    }
}

/// Reads every `.rs` file under `src` (a crate's source root) into module → file.
fn read_crate(src: &Path) -> BTreeMap<Module, File> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut c = Collector::default();
            c.visit_file(&ast);
            files.insert(
                module,
                File {
                    source: path,
                    children: c.children,
                    uses: c.uses,
                    paths: c.paths,
                },
            );
        }
    }
    // Files no module declares (a binary's `main.rs` siblings under src/bin, test-only files).
    files
}

/// The crate's dependency graph: file → files whose items it names (ancestors left out).
fn edges(files: &BTreeMap<Module, File>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut out = BTreeMap::new();
    for (module, file) in files {
        let mut to = BTreeSet::new();
        for path in &file.paths {
            if let Some(target) = resolve(files, module, path, 0) {
                let ancestor = target.len() <= module.len() && module.starts_with(&target);
                if !ancestor {
                    to.insert(target);
                }
            }
        }
        out.insert(module.clone(), to);
    }
    out
}

/// The file that defines what `path` (as written in `from`) names, following `use` bindings;
/// `None` for paths outside the crate.
fn resolve(
    files: &BTreeMap<Module, File>,
    from: &Module,
    path: &[String],
    depth: usize,
) -> Option<Module> {
    if depth > 16 || path.is_empty() {
        return None;
    }
    let (mut at, rest): (Module, &[String]) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.clone(), &path[1..]),
        "super" => {
            let mut at = from.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
            (at, rest)
        }
        first => {
            let file = files.get(from)?;
            if file.children.contains(first) {
                (from.clone(), path)
            } else if let Some(bound) = file.uses.get(first) {
                // A name this file imported (`use crate::index; index::Store`).
                if bound.len() == 1 && bound[0] == first {
                    return None; // `use serde;` and the like
                }
                let mut joined = bound.clone();
                joined.extend_from_slice(&path[1..]);
                return resolve(files, from, &joined, depth + 1);
            } else {
                return None;
            }
        }
    };
    // Walk down as far as the segments name files.
    let mut i = 0;
    while i < rest.len() {
        let mut next = at.clone();
        next.push(rest[i].clone());
        if files.contains_key(&next) {
            at = next;
            i += 1;
        } else {
            break;
        }
    }
    // The remaining segment may be a name `at` imports (a re-export): follow it.
    if i < rest.len() {
        let file = files.get(&at)?;
        if !file.children.contains(&rest[i])
            && let Some(bound) = file.uses.get(&rest[i])
        {
            let mut joined = bound.clone();
            joined.extend_from_slice(&rest[i + 1..]);
            if let Some(target) = resolve(files, &at, &joined, depth + 1) {
                return Some(target);
            }
        }
    }
    files.contains_key(&at).then_some(at)
}

/// The strongly connected components with more than one file (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in &s.graph[v] {
            let Some(w) = s.graph.get_key_value(w).map(|(k, _)| k) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "(root)".into()
    } else {
        m.join("::")
    }
}

/// The cycles of one crate, each with one loop of files spelled out.
fn cycle_report(src: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let files = read_crate(&root);
    let graph = edges(&files);
    cycles(&graph)
        .into_iter()
        .map(|comp| {
            let names: Vec<String> = comp.iter().map(name).collect();
            let inside: BTreeSet<&Module> = comp.iter().collect();
            let detail: Vec<String> = comp
                .iter()
                .map(|m| {
                    let to: Vec<String> = graph[m]
                        .iter()
                        .filter(|t| inside.contains(t))
                        .map(name)
                        .collect();
                    format!(
                        "    {} ({}) → {}",
                        name(m),
                        files[m].source.display(),
                        to.join(", ")
                    )
                })
                .collect();
            format!(
                "{src}: a cycle of {} files: {}\n{}",
                comp.len(),
                names.join(", "),
                detail.join("\n")
            )
        })
        .collect()
}

#[test]
fn no_file_of_any_crate_imports_in_a_circle() {
    let mut found = Vec::new();
    for src in ["crates/chainlog/src", "src", "crates/chainlog-gen/src"] {
        found.extend(cycle_report(src));
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The library's floors, lowest first, as ARCHITECTURE.md lists them: a file may use its own
/// floor and the ones below, never one above.
const LAYERS: &[&[&str]] = &[
    &["error", "id"],
    &["transcript"],
    &["chain"],
    &["resume"],
    &["index"],
    &["catalog"],
    &["export", "search", "usage", "writer"],
    &["sync"],
    &["store"],
];

fn layer(m: &Module) -> Option<usize> {
    if m.is_empty() {
        return Some(LAYERS.len()); // the crate root: the public face, above everything
    }
    LAYERS
        .iter()
        .position(|floor| floor.contains(&m[0].as_str()))
}

#[test]
fn no_file_of_the_library_imports_from_a_floor_above_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/chainlog/src");
    let files = read_crate(&root);
    let graph = edges(&files);
    let mut wrong = Vec::new();
    for (from, to) in &graph {
        if from.first().is_some_and(|f| f == "testing") {
            continue;
        }
        let Some(lf) = layer(from) else {
            wrong.push(format!("{} is on no floor of LAYERS", name(from)));
            continue;
        };
        for t in to {
            let Some(lt) = layer(t) else { continue };
            if lt > lf {
                wrong.push(format!(
                    "{} (floor {lf}) uses {} (floor {lt})",
                    name(from),
                    name(t)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports from a floor above:\n{}",
        wrong.join("\n")
    );
}

/// The check itself: a circle written on purpose is found.
#[test]
fn a_circle_is_found() {
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    graph.insert(m("a"), [m("b")].into());
    graph.insert(m("b"), [m("c")].into());
    graph.insert(m("c"), [m("a")].into());
    graph.insert(m("d"), [m("a")].into());
    assert_eq!(cycles(&graph), vec![vec![m("a"), m("b"), m("c")]]);
}
