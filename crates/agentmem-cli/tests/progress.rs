//! Long operations show their progress on a terminal, and nowhere else:
//! run with their output piped or captured, they print only their results.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn transcript() -> PathBuf {
    fixture("../agentmem-import/tests/fixtures/claude-code-turn-2.jsonl")
}

fn locomo() -> PathBuf {
    fixture("tests/fixtures/locomo/mini.json")
}

fn tiny_model() -> PathBuf {
    fixture("../agentmem-embed/tests/tiny-bert")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    common::agentmem_with_input(dir, &common::args(args), &[("OPENAI_API_KEY", None)], "")
}

fn path_arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The characters indicatif draws a bar with, and the words of our bars.
fn shows_progress(text: &str) -> bool {
    [
        "replaying",
        "evaluating",
        "embedding",
        "importing",
        "█",
        "\u{1b}[",
    ]
    .iter()
    .any(|mark| text.contains(mark))
}

#[test]
fn replay_in_text_mode_prints_a_readable_line_per_turn_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let example = fixture("../../examples/long-coding-session.jsonl");
    let replay = |extra: &[&str]| {
        let mut args = vec!["--durability", "os", "replay", path_arg(&example)];
        // Inline: the two runs must give the same contexts, and which call
        // applies a background draft depends on its thread.
        args.extend(["--model", "gpt-4o", "--budget", "16000"]);
        args.extend(["--compaction-timing", "inline"]);
        args.extend(extra);
        run(dir.path(), &args)
    };
    let json = replay(&["--json"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (summary, turns) = lines.split_last().unwrap();

    let text = replay(&[]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed.len(), turns.len() + 1, "{stdout}");
    for (line, turn) in printed.iter().zip(turns) {
        let start = format!("turn {}: ", turn["turn"]);
        let sizes = line
            .strip_prefix(&start)
            .unwrap_or_else(|| panic!("{line}"));
        let sizes = sizes.split(" tokens").next().unwrap().replace(',', "");
        let (used, budget) = sizes.split_once(" / ").unwrap();
        assert_eq!(
            (used.parse::<u64>().ok(), budget.parse::<u64>().ok()),
            (turn["context_tokens"].as_u64(), turn["budget"].as_u64()),
            "{line} for {turn}"
        );
        assert!(line.contains("model call"), "{line}");
        assert!(
            serde_json::from_str::<Value>(line).is_err(),
            "not JSON: {line}"
        );
        let compacted = turn["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "compacted");
        assert_eq!(line.contains("compacted "), compacted, "{line} for {turn}");
    }
    let last = printed.last().unwrap();
    assert!(
        last.starts_with(&format!("replayed {} turns", summary["turns"]))
            && last.contains(&format!("{} compactions", summary["compactions"]))
            && last.contains(&format!("{} over budget", summary["turns_over_budget"])),
        "{last}"
    );
    for output in [&json, &text] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !shows_progress(&stderr),
            "no progress off a terminal: {stderr:?}"
        );
    }
}

#[test]
fn eval_recall_and_import_print_no_progress_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = [
        run(dir.path(), &["import", path_arg(&transcript())]),
        run(
            dir.path(),
            &["eval", "locomo", "--budget", "120", path_arg(&locomo())],
        ),
        run(
            dir.path(),
            &[
                "recall",
                "what was fixed?",
                "--embedder-dir",
                path_arg(&tiny_model()),
            ],
        ),
    ];
    for output in outputs {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!shows_progress(&stderr), "{stderr:?}");
        assert!(!shows_progress(&stdout), "{stdout:?}");
    }
}

#[cfg(unix)]
#[test]
fn long_operations_show_their_progress_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let shown = |args: &[&str]| common::in_terminal(dir.path(), &common::args(args), "");
    let replayed = shown(&[
        "replay",
        path_arg(&transcript()),
        "--model",
        "gpt-4o",
        "--budget",
        "3000",
    ]);
    assert!(replayed.contains("replaying"), "{replayed}");
    assert!(
        replayed.contains("replayed "),
        "the summary follows: {replayed}"
    );
    let evaluated = shown(&["eval", "locomo", "--budget", "120", path_arg(&locomo())]);
    assert!(evaluated.contains("evaluating"), "{evaluated}");
    let imported = shown(&["import", path_arg(&transcript())]);
    assert!(imported.contains("importing"), "{imported}");
    let embedded = shown(&[
        "recall",
        "what was fixed?",
        "--embedder-dir",
        path_arg(&tiny_model()),
        "--wait-for-vectors",
    ]);
    assert!(embedded.contains("embedding"), "{embedded}");
    // Once embedded, a wait has nothing to show.
    let again = shown(&[
        "recall",
        "what was fixed?",
        "--embedder-dir",
        path_arg(&tiny_model()),
        "--wait-for-vectors",
    ]);
    assert!(!again.contains("embedding"), "{again}");
}
