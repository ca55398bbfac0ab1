//! The harness's top-level modules form layers: no import cycle between them. A cycle is a
//! type in the wrong file (DESIGN.md's layering: plan, journal, profile, browser, fault,
//! worker and its site adapter, site, scenario, oracle, evidence, trial, runner).
//!
//! The check reads `harness/src`: every `crate::name` a module's code names (comments and
//! its trailing `#[cfg(test)]` module left out) is an edge from that module to `name`. A
//! cycle fails with the edges that make it and the files that hold them.

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

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let cut = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|marker| text.find(marker))
        .min()
        .unwrap_or(text.len());
    text[..cut]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `crate::name` references in `code`.
fn referenced(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `$crate::` in macros is the crate root seen from outside: not a module edge.
            !code[..*at].ends_with('$')
        })
        .map(|(at, m)| {
            code[at + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs")
            .to_owned();
        if top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for name in referenced(&code(&text)) {
            if name != top {
                graph
                    .entry(top.clone())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
        graph.entry(top).or_default();
    }
    graph
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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(graph.len() > 10, "the walk found the modules: {graph:?}");
    let found = cycles(&graph);
    let mut report = String::new();
    for component in &found {
        report.push_str(&format!("cycle among {component:?}:\n"));
        for a in component {
            for (b, files) in &graph[a] {
                if component.contains(b) {
                    report.push_str(&format!("  {a} -> {b} (in {files:?})\n"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
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
    assert_eq!(
        referenced("use crate::plan::Boundary; $crate::runner::main(); crate::x"),
        ["plan", "x"].map(str::to_owned).into_iter().collect()
    );
    assert_eq!(
        code("a\n// crate::z\nb\n#[cfg(test)]\nmod tests { crate::y }"),
        "a\nb"
    );
}
