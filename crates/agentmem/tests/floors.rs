//! The engine's floors hold: no module imports from a floor above its own.
//!
//! The floors are the list in the crate docs (`src/lib.rs`, between
//! `<!-- floors -->` and `<!-- /floors -->`), top to bottom, one line per
//! floor naming its top-level modules in backticks before the colon. Every
//! `.rs` file under `src/` is read, its test code left out (`*_tests.rs`,
//! `tests.rs` and items under `#[cfg(test)]`), and each `crate::` path in
//! its code (comments aside) is checked against the list.

use std::collections::BTreeMap;
use std::path::Path;

/// A floor list: module name to its floor, 0 the bottom.
type Floors = BTreeMap<String, usize>;

/// Reads the floor list from the crate docs.
fn floors_of(lib: &str) -> Floors {
    let start = lib
        .find("<!-- floors -->")
        .expect("lib.rs has a floors list");
    let end = lib.find("<!-- /floors -->").expect("the floors list ends");
    let lines: Vec<&str> = lib[start..end]
        .lines()
        .skip(1)
        .map(|line| line.trim_start_matches("//!").trim())
        .filter(|line| !line.is_empty())
        .collect();
    let mut floors = Floors::new();
    for (i, line) in lines.iter().enumerate() {
        let names = line.split_once(':').map_or(*line, |(names, _)| names);
        let floor = lines.len() - 1 - i;
        for name in names.split('`').skip(1).step_by(2) {
            assert!(
                floors.insert(name.to_owned(), floor).is_none(),
                "{name} is on two floors"
            );
        }
    }
    // What the crate root re-exports stands on the floor of where it is from.
    for line in lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub use "))
    {
        let Some(from) = floors.get(line.split("::").next().unwrap_or("")).copied() else {
            continue;
        };
        let names = line.rsplit("::").next().unwrap_or("");
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                floors.entry(name.to_owned()).or_insert(from);
            }
        }
    }
    floors
}

/// `source` without comments and without the items under `#[cfg(test)]`.
fn code_of(source: &str) -> String {
    let without_comments: String = source
        .lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut code = without_comments;
    while let Some(at) = code.find("#[cfg(test)]") {
        let rest = &code[at..];
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices().skip("#[cfg(test)]".len()) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        code.replace_range(at..at + end, "");
    }
    code
}

/// The top-level modules a piece of code names through `crate::` paths,
/// `use crate::{a::b, c}` groups included.
fn modules_named(code: &str) -> Vec<String> {
    let word = |text: &str| -> String {
        text.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        names.push(word(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(word(rest));
        }
    }
    names.retain(|name| !name.is_empty() && name != "self");
    names
}

/// Every import of a floor above the importing file's, as
/// `file: imports crate::module (floor …, above floor …)`; and every module
/// missing from the list.
fn violations(files: &[(String, String)], floors: &Floors) -> Vec<String> {
    let mut found = Vec::new();
    for (path, source) in files {
        let file_name = path.rsplit('/').next().unwrap_or(path);
        if path == "lib.rs" || file_name == "tests.rs" || file_name.ends_with("_tests.rs") {
            continue;
        }
        let top = path
            .split('/')
            .next()
            .unwrap_or(path)
            .trim_end_matches(".rs");
        let Some(&own) = floors.get(top) else {
            found.push(format!(
                "{path}: module {top} is on no floor of the list in lib.rs"
            ));
            continue;
        };
        for name in modules_named(&code_of(source)) {
            match floors.get(&name) {
                Some(&floor) if floor > own => found.push(format!(
                    "{path}: imports crate::{name} (floor {floor}), above its own floor {own} ({top})"
                )),
                Some(_) => {}
                None => found.push(format!("{path}: imports crate::{name}, on no floor of the list in lib.rs")),
            }
        }
    }
    found
}

fn read_tree(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            files.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn no_module_imports_from_a_floor_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floors = floors_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    read_tree(&src, &src, &mut files);
    assert!(files.len() > 50, "read {} files", files.len());
    let found = violations(&files, &floors);
    assert!(
        found.is_empty(),
        "imports against the floors:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_top_level_module_is_on_a_floor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floors = floors_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name.ends_with("_tests") {
            continue;
        }
        assert!(
            floors.contains_key(&name),
            "src/{name} is on no floor of the list in lib.rs"
        );
    }
}

#[test]
fn the_check_catches_an_upward_import_and_passes_downward_ones() {
    let lib = "//! <!-- floors -->\n//! 1. `top`: the top.\n//! 2. `mid`, `side`: the middle.\n//! 3. `base`: the bottom.\n//! <!-- /floors -->\npub use top::{Top, Other};\npub use base::error::Error;\n";
    let floors = floors_of(lib);
    assert_eq!(floors["top"], 2);
    assert_eq!(floors["side"], 1);
    assert_eq!(floors["base"], 0);
    assert_eq!((floors["Top"], floors["Other"], floors["Error"]), (2, 2, 0));
    let tree = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect()
    };
    let fine = tree(&[
        ("top.rs", "use crate::mid::X;\nuse crate::{base::Y, side};"),
        (
            "mid/mod.rs",
            "use crate::side::Z; fn f() -> crate::Error { crate::base::g() }",
        ),
        (
            "base/a.rs",
            "// crate::top::in_a_comment\n#[cfg(test)]\nmod tests { use crate::top::T; }",
        ),
        ("base/a_tests.rs", "use crate::top::T;"),
        ("lib.rs", "pub use crate::top::T;"),
    ]);
    assert_eq!(violations(&fine, &floors), Vec::<String>::new());
    let upward = tree(&[
        ("base/a.rs", "use crate::mid::X;"),
        ("base/b.rs", "use crate::{base::c, top::T};"),
        ("mid/m.rs", "fn f() -> crate::top::T { todo!() }"),
        ("side.rs", "fn f() -> crate::Top { todo!() }"),
        ("stray.rs", "use crate::base::a;"),
    ]);
    let found = violations(&upward, &floors);
    assert_eq!(found.len(), 5, "{found:#?}");
    assert!(
        found[0].starts_with("base/a.rs: imports crate::mid"),
        "{}",
        found[0]
    );
    assert!(
        found[1].starts_with("base/b.rs: imports crate::top"),
        "{}",
        found[1]
    );
    assert!(
        found[2].starts_with("mid/m.rs: imports crate::top"),
        "{}",
        found[2]
    );
    assert!(
        found[3].starts_with("side.rs: imports crate::Top"),
        "{}",
        found[3]
    );
    assert!(found[4].contains("stray is on no floor"), "{}", found[4]);
}
