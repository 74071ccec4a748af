//! Processes that edit an agent's shared memory files at the same time
//! lose nothing: every read-modify-write of MEMORY.md and the facts runs
//! under the agent's memory lock.

mod common;

use std::path::Path;
use std::process::Command;

const EDITS_PER_PROCESS: usize = 25;

fn agentmem(dir: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_agentmem"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "agentmem {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `edits` (each a command's arguments) in order in one thread per
/// list, the lists side by side.
fn side_by_side(dir: &Path, lists: Vec<Vec<Vec<String>>>) {
    std::thread::scope(|scope| {
        for edits in lists {
            scope.spawn(move || {
                for edit in edits {
                    let args: Vec<&str> = edit.iter().map(String::as_str).collect();
                    agentmem(dir, &args);
                }
            });
        }
    });
}

/// A fact no other in these tests is near to: its two words of its own
/// outweigh the four it shares.
fn fact(writer: &str, n: usize) -> String {
    const WORDS: [&str; 26] = [
        "amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo",
        "juniper", "kelp", "lagoon", "meadow", "nectar", "onyx", "pebble", "quartz", "reef",
        "saffron", "tundra", "umber", "violet", "willow", "xenon", "yarrow", "zephyr",
    ];
    const ANIMALS: [&str; 26] = [
        "aardvark", "bison", "cougar", "dingo", "egret", "ferret", "gecko", "heron", "ibis",
        "jackal", "koala", "lemur", "marmot", "newt", "ocelot", "puffin", "quail", "raven",
        "stoat", "tapir", "urchin", "vole", "walrus", "xerus", "yak", "zebra",
    ];
    format!(
        "The {writer} team owns the {} {} pipeline.",
        WORDS[n], ANIMALS[n]
    )
}

#[test]
fn notes_appended_by_two_processes_at_once_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let notes = |writer: &str| -> Vec<Vec<String>> {
        (0..EDITS_PER_PROCESS)
            .map(|n| common::args(&["memory", "append", &format!("- note {writer}-{n}")]))
            .collect()
    };
    side_by_side(dir.path(), vec![notes("a"), notes("b")]);
    let memory = std::fs::read_to_string(dir.path().join("agents/default/MEMORY.md")).unwrap();
    for writer in ["a", "b"] {
        for n in 0..EDITS_PER_PROCESS {
            assert!(
                memory
                    .lines()
                    .any(|line| line == format!("- note {writer}-{n}")),
                "note {writer}-{n} was lost:\n{memory}"
            );
        }
    }
    assert_eq!(memory.lines().count(), 2 * EDITS_PER_PROCESS);
}

#[test]
fn facts_added_while_others_are_deleted_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut doomed = Vec::new();
    for n in 0..EDITS_PER_PROCESS {
        let added = agentmem(dir.path(), &["facts", "add", &fact("old", n)]);
        let added: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
        doomed.push(added["id"].as_str().unwrap().to_owned());
    }
    let adds = (0..EDITS_PER_PROCESS)
        .map(|n| common::args(&["facts", "add", &fact("new", n)]))
        .collect();
    let deletes = doomed
        .iter()
        .map(|id| common::args(&["facts", "delete", id]))
        .collect();
    side_by_side(dir.path(), vec![adds, deletes]);

    let listed = agentmem(dir.path(), &["facts", "list", "--json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let texts: Vec<&str> = listed.iter().map(|f| f["fact"].as_str().unwrap()).collect();
    for n in 0..EDITS_PER_PROCESS {
        assert!(
            texts.contains(&fact("new", n).as_str()),
            "fact new{n} was lost: {texts:?}"
        );
    }
    assert_eq!(
        texts.len(),
        EDITS_PER_PROCESS,
        "every old fact deleted: {texts:?}"
    );
}
