//! The harness's modules form layers: no import cycle between them. A cycle is a type in the
//! wrong file (DESIGN.md's layering: plan, journal, profile, browser, fault, worker and its
//! site adapter, site, scenario, oracle, evidence, trial, runner).
//!
//! The check reads `harness/src` and looks at two levels: the top-level modules
//! (`trial` → `fault`), and within each top-level folder, its modules among themselves
//! (`trial::engine` → `trial::faults`). Every path a module's code names through `crate::`,
//! `super::` or `self::` is an edge from that module to the module the path leads to.
//! Comments and `mod tests` blocks (brace-matched, wherever they sit in the file) are left
//! out; a folder's own `mod.rs` and its children naming each other (re-exports, shared types
//! of the parent) are the parent's business, not edges between siblings. A cycle fails with
//! the edges that make it and the files that hold them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("harness/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The end of the literal or comment that starts at `i` in `s`, or `None` when none does.
fn skip_literal(s: &[u8], i: usize) -> Option<usize> {
    let at = |k: usize| s.get(k).copied();
    match s[i] {
        b'/' if at(i + 1) == Some(b'/') => Some(
            s[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(s.len(), |n| i + n),
        ),
        b'/' if at(i + 1) == Some(b'*') => {
            let end = s[i + 2..].windows(2).position(|w| w == b"*/");
            Some(end.map_or(s.len(), |n| i + 2 + n + 2))
        }
        b'r' if matches!(at(i + 1), Some(b'"' | b'#'))
            && !s[..i]
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') =>
        {
            let hashes = s[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if at(i + 1 + hashes) != Some(b'"') {
                return None;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let end = s[body..].windows(close.len()).position(|w| w == close);
            Some(end.map_or(s.len(), |n| body + n + close.len()))
        }
        b'"' => {
            let mut k = i + 1;
            while k < s.len() && s[k] != b'"' {
                k += if s[k] == b'\\' { 2 } else { 1 };
            }
            Some((k + 1).min(s.len()))
        }
        // A char literal ('{', '\n'), not a lifetime ('a).
        b'\'' if at(i + 1) == Some(b'\\') => {
            let close = s[i + 2..].iter().position(|&c| c == b'\'')?;
            Some(i + 2 + close + 1)
        }
        b'\'' if at(i + 2) == Some(b'\'') => Some(i + 3),
        _ => None,
    }
}

/// The code of a file without its comments and without its `mod tests` blocks (with the
/// attributes before them), matched brace by brace outside literals.
fn code(text: &str) -> String {
    let s = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < s.len() {
        if let Some(end) = skip_literal(s, i) {
            // A literal's text names no module: it stays as an empty one; comments go.
            if s[i] != b'/' {
                out.push_str("\"\"");
            }
            i = end;
            continue;
        }
        if text[i..].starts_with("mod tests")
            && !s[..i]
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            && let Some(open) = text[i..].find(['{', ';']).map(|n| i + n)
            && s[open] == b'{'
            && text[i + "mod tests".len()..open].trim().is_empty()
        {
            // Drop the attributes just written before it (`#[cfg(test)]`).
            let mut cut = out.trim_end().len();
            while let Some(attr) = out[..cut].trim_end().strip_suffix(']') {
                let Some(start) = attr.rfind("#[") else { break };
                cut = start;
            }
            out.truncate(cut);
            i = matching_brace(s, open);
            continue;
        }
        let c = text[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The index just past the brace that closes the one at `open`.
fn matching_brace(s: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < s.len() {
        if let Some(end) = skip_literal(s, i) {
            i = end;
            continue;
        }
        match s[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    s.len()
}

fn ident_at(code: &str, at: usize) -> &str {
    let end = code[at..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(code.len(), |n| at + n);
    &code[at..end]
}

/// The paths `code` names from `crate::`, `super::` or `self::`, made absolute (module
/// segments from the crate root; the last may be an item) for a file of module `module`.
/// A group (`super::{a, b::C}`) gives one path per member.
fn referenced(code: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    for prefix in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().last();
            // `$crate::` in macros is the crate root seen from outside; `a::super::` is
            // reached from its start.
            if before.is_some_and(|c| c == '$' || c == ':' || c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut base: Vec<String> = match prefix {
                "crate::" => Vec::new(),
                "self::" => module.to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            let mut i = at + prefix.len();
            while code[i..].starts_with("super::") {
                base.pop();
                i += "super::".len();
            }
            let mut path = base;
            loop {
                let name = ident_at(code, i);
                if name.is_empty() {
                    break;
                }
                path.push(name.to_owned());
                i += name.len();
                if !code[i..].starts_with("::") {
                    break;
                }
                i += 2;
            }
            if code[i..].starts_with('{') {
                let close = matching_brace(code.as_bytes(), i);
                for member in code[i + 1..close - 1].split(',') {
                    let member = member.trim();
                    let mut p = path.clone();
                    p.extend(
                        member
                            .split("::")
                            .map(|s| ident_at(s.trim(), 0).to_owned())
                            .take_while(|s| !s.is_empty() && s != "self"),
                    );
                    found.insert(p);
                }
            } else {
                found.insert(path);
            }
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

/// A file's module path from the crate root: `trial/faults/mod.rs` is `trial::faults`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The edges between modules, with the files that make them, in one graph for the top
/// level and one for each top-level folder's modules (named `folder::module`).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn module_graphs(files: &[(String, String)]) -> BTreeMap<String, Graph> {
    // Which modules exist, to tell `crate::trial::faults::X` (a module) from
    // `crate::trial::FaultPlan` (an item of `trial`).
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for (rel, text) in files {
        let module = module_of(rel);
        if module.first().is_none_or(|m| m == "lib" || m == "bin") {
            continue;
        }
        let top = module[0].clone();
        graphs
            .entry(String::new())
            .or_default()
            .entry(top.clone())
            .or_default();
        let child = (module.len() >= 2).then(|| format!("{top}::{}", module[1]));
        if let Some(child) = &child {
            graphs
                .entry(top.clone())
                .or_default()
                .entry(child.clone())
                .or_default();
        }
        for path in referenced(&code(text), &module) {
            let to_top = &path[0];
            if *to_top != top {
                add_edge(&mut graphs, "", &top, to_top, rel);
                continue;
            }
            let (Some(child), Some(to)) = (&child, path.get(1)) else {
                continue;
            };
            if modules.contains(&path[..2]) {
                let to = format!("{top}::{to}");
                if to != *child {
                    add_edge(&mut graphs, &top, child, &to, rel);
                }
            }
        }
    }
    graphs
}

fn add_edge(graphs: &mut BTreeMap<String, Graph>, level: &str, from: &str, to: &str, file: &str) {
    graphs
        .entry(level.to_owned())
        .or_default()
        .entry(from.to_owned())
        .or_default()
        .entry(to.to_owned())
        .or_default()
        .insert(file.to_owned());
}

fn source_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .display()
                .to_string();
            let text = std::fs::read_to_string(&p).expect("a readable source file");
            (rel, text)
        })
        .collect()
}

/// Every cycle of every graph, with the edges that make it.
fn cycle_report(graphs: &BTreeMap<String, Graph>) -> String {
    let mut report = String::new();
    for graph in graphs.values() {
        for component in &cycles(graph) {
            report.push_str(&format!("cycle among {component:?}:\n"));
            for a in component {
                for (b, files) in &graph[a] {
                    if component.contains(b) {
                        report.push_str(&format!("  {a} -> {b} (in {files:?})\n"));
                    }
                }
            }
        }
    }
    report
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn the_harness_modules_have_no_import_cycle() {
    let graphs = module_graphs(&source_files());
    assert!(
        graphs[""].len() > 10,
        "the walk found the modules: {graphs:?}"
    );
    assert!(
        graphs["trial"].contains_key("trial::engine"),
        "the walk found the second level: {graphs:?}"
    );
    let report = cycle_report(&graphs);
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_check_sees_a_cycle() {
    let mut graph = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(a.to_owned())
            .or_default()
            .entry(b.to_owned())
            .or_default()
            .insert(format!("{a}.rs"));
        graph.entry(b.to_owned()).or_default();
    }
    assert_eq!(cycles(&graph), [["a", "b", "c"]]);
}

#[test]
fn paths_resolve_from_the_crate_root() {
    let module = ["trial", "faults", "step"].map(str::to_owned);
    let found = referenced(
        "use crate::plan::Boundary; $crate::runner::main(); use super::super::{context::X, Trial};\n\
         use self::inner::Y; super::FaultUnit",
        &module,
    );
    let want: BTreeSet<Vec<String>> = [
        "plan::Boundary",
        "trial::context::X",
        "trial::Trial",
        "trial::faults::step::inner::Y",
        "trial::faults::FaultUnit",
    ]
    .iter()
    .map(|p| p.split("::").map(str::to_owned).collect())
    .collect();
    assert_eq!(found, want);
}

#[test]
fn only_comments_literals_and_mod_tests_blocks_are_left_out() {
    let text = "a // crate::z\n\
        #[cfg(test)]\n\
        mod tests { fn f() { let s = \"}\"; let c = '}'; crate::y } }\n\
        b /* crate::w */ \"crate::v\" r#\"crate::u\"#\n\
        #[cfg(test)]\n\
        fn helper<'a>() { crate::after }";
    let kept = code(text);
    assert!(!kept.contains("crate::y"), "{kept}");
    assert!(
        !kept.contains("crate::z") && !kept.contains("crate::w"),
        "{kept}"
    );
    assert!(
        !kept.contains("crate::v") && !kept.contains("crate::u"),
        "{kept}"
    );
    assert!(
        kept.contains("crate::after"),
        "code after a `mod tests` block is seen: {kept}"
    );
    assert!(!kept.contains("mod tests"), "{kept}");
}

/// A cycle planted between two modules of one folder, each edge after a `mod tests` block
/// of its file (where cutting at the first `#[cfg(test)]` saw nothing), is found with its
/// edges and files; the top level stays clean.
#[test]
fn a_planted_cycle_between_second_level_modules_is_found() {
    let files: Vec<(String, String)> = [
        (
            "trial/mod.rs",
            "mod engine; mod faults; pub use engine::run; pub struct Trial;",
        ),
        (
            "trial/engine.rs",
            "use super::Trial;\n#[cfg(test)]\nmod tests { use crate::fault::X; }\n\
             use super::faults::unit;",
        ),
        (
            "trial/faults/mod.rs",
            "mod crash;\nuse super::Trial;\n#[cfg(test)]\nmod tests { }\n\
             use crate::trial::engine::Engine;",
        ),
        (
            "trial/faults/crash.rs",
            "use super::Unit; use crate::plan::Boundary;",
        ),
        ("plan.rs", "pub enum Boundary {}"),
        ("fault.rs", "use crate::plan::Boundary;"),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .into_iter()
    .collect();
    let graphs = module_graphs(&files);
    assert_eq!(cycles(&graphs[""]), Vec::<Vec<String>>::new(), "{graphs:?}");
    assert_eq!(
        cycles(&graphs["trial"]),
        [["trial::engine", "trial::faults"]],
        "{graphs:?}"
    );
    let report = cycle_report(&graphs);
    assert!(
        report.contains("trial::engine -> trial::faults (in {\"trial/engine.rs\"})"),
        "{report}"
    );
    assert!(
        report.contains("trial::faults -> trial::engine (in {\"trial/faults/mod.rs\"})"),
        "{report}"
    );
}
