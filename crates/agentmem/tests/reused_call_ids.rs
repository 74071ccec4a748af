//! A tool call id used again once its call was answered (servers that
//! number calls per response write `call_0` for every call; SWE-agent runs
//! through them record it so) names a new interaction: every renderer keeps
//! every interaction, paired with its own result, under ids unique in the
//! request.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agentmem::{Event, PrepareRequest, Target};
use agentmem_import::Format;
use serde_json::Value;

/// A real SWE-agent trajectory from the shared evaluation data.
fn trajectory(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/eval-data/trajectories/swe-agent")
        .join(name);
    assert!(
        path.exists(),
        "the shared evaluation data is missing: {}",
        path.display()
    );
    path
}

/// The trajectory as recorded through a server that names every call
/// `call_0`: the same run, one id for all its calls.
fn with_one_call_id(path: &Path) -> String {
    let mut root: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for message in root["history"].as_array_mut().unwrap() {
        if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for call in calls {
                call["id"] = "call_0".into();
            }
        }
        if let Some(ids) = message
            .get_mut("tool_call_ids")
            .and_then(Value::as_array_mut)
        {
            for id in ids {
                *id = "call_0".into();
            }
        }
    }
    root.to_string()
}

fn events(text: &str) -> Vec<Event> {
    agentmem_import::parse(Format::SweAgent, Path::new("run.traj"), text)
        .unwrap()
        .events
}

/// One interaction as a payload carries it: the call's id, its tool name,
/// and the text of the result paired with it.
#[derive(Debug, PartialEq)]
struct Sent {
    id: String,
    tool: String,
    result: String,
}

/// The interactions of `payload`, paired as `target`'s API pairs them: by
/// id, or for Gemini (no ids) by order within the next content.
fn interactions(target: Target, payload: &Value) -> Vec<Sent> {
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut results: Vec<(String, String)> = Vec::new();
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match target {
        Target::OpenAiChat => {
            for message in payload["messages"].as_array().unwrap() {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    calls.push((text(&call["id"]), text(&call["function"]["name"])));
                }
                if message["role"] == "tool" {
                    results.push((text(&message["tool_call_id"]), text(&message["content"])));
                }
            }
        }
        Target::OpenAiResponses => {
            for item in payload["input"].as_array().unwrap() {
                match item["type"].as_str() {
                    Some("function_call") => {
                        calls.push((text(&item["call_id"]), text(&item["name"])))
                    }
                    Some("function_call_output") => {
                        results.push((text(&item["call_id"]), text(&item["output"])))
                    }
                    _ => {}
                }
            }
        }
        Target::Anthropic => {
            for message in payload["messages"].as_array().unwrap() {
                for block in message["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("tool_use") => calls.push((text(&block["id"]), text(&block["name"]))),
                        Some("tool_result") => {
                            let content = match &block["content"] {
                                Value::Array(parts) => {
                                    parts.iter().map(|p| text(&p["text"])).collect()
                                }
                                other => text(other),
                            };
                            results.push((text(&block["tool_use_id"]), content));
                        }
                        _ => {}
                    }
                }
            }
        }
        Target::Gemini => {
            let mut n = 0;
            for content in payload["contents"].as_array().unwrap() {
                let parts = content["parts"].as_array().unwrap();
                for part in parts {
                    if let Some(call) = part.get("functionCall") {
                        n += 1;
                        calls.push((n.to_string(), text(&call["name"])));
                    }
                }
                let answered = results.len();
                for (i, part) in parts
                    .iter()
                    .filter_map(|p| p.get("functionResponse"))
                    .enumerate()
                {
                    let response = &part["response"];
                    let output = response
                        .get("output")
                        .or(response.get("error"))
                        .unwrap_or(response);
                    results.push(((answered + i + 1).to_string(), text(output)));
                }
            }
        }
    }
    let ids: HashSet<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids.len(),
        calls.len(),
        "{target:?}: call ids unique in the request"
    );
    calls
        .into_iter()
        .map(|(id, tool)| {
            let answered: Vec<&(String, String)> =
                results.iter().filter(|(r, _)| *r == id).collect();
            assert_eq!(answered.len(), 1, "{target:?}: call {id} has one result");
            Sent {
                id,
                tool,
                result: answered[0].1.clone(),
            }
        })
        .collect()
}

/// What the model is sent of `events`, for `target`.
fn sent(events: Vec<Event>, target: Target) -> Vec<Sent> {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    session.ingest(events).unwrap();
    let prepared = session
        .prepare(&PrepareRequest::new("gpt-4o", target))
        .unwrap();
    interactions(target, &prepared.payload.to_value())
}

#[test]
fn a_trajectory_that_reuses_one_call_id_keeps_every_interaction_in_every_renderer() {
    let path = trajectory("6e44b9__sweagenttestrepo-1c2844.traj");
    let original = events(&std::fs::read_to_string(&path).unwrap());
    let reused = events(&with_one_call_id(&path));
    for target in Target::ALL {
        let expected = sent(original.clone(), target);
        assert_eq!(
            expected.len(),
            5,
            "{target:?}: the run's four commands and its submit"
        );
        let got = sent(reused.clone(), target);
        let shape = |s: &[Sent]| -> Vec<(String, String)> {
            s.iter()
                .map(|s| (s.tool.clone(), s.result.clone()))
                .collect()
        };
        assert_eq!(shape(&got), shape(&expected), "{target:?}");
        assert!(
            got.iter()
                .any(|s| s.tool == "bash" && s.result.starts_with("8.2")),
            "{target:?}: the run that verified the fix"
        );
    }
}

/// The session names each reused id as the events come, so the view it keeps
/// is intact (nothing to repair per call) while the log keeps the ids as the
/// agent wrote them.
#[test]
fn the_view_names_reused_ids_as_events_come_and_the_log_keeps_them() {
    let path = trajectory("6e44b9__sweagenttestrepo-1c2844.traj");
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    session.ingest(events(&with_one_call_id(&path))).unwrap();
    let prepared = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let repaired: Vec<_> = prepared
        .stats
        .actions
        .iter()
        .filter(|a| matches!(a, agentmem::pipeline::tiers::Action::PairsRepaired { .. }))
        .collect();
    assert!(repaired.is_empty(), "{repaired:?}");
    let ids: Vec<String> = interactions(Target::OpenAiChat, &prepared.payload.to_value())
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(
        ids,
        ["call_0", "call_0-2", "call_0-3", "call_0-4", "swe-call-1"]
    );
    let log =
        std::fs::read_to_string(store.session_paths(&agent, session.id()).raw_traces()).unwrap();
    assert_eq!(log.matches(r#""tool_call_id":"call_0""#).count(), 8);
    assert!(!log.contains("call_0-2"));
}

/// Two trajectories imported into one session: both number their calls
/// `swe-call-1`, `swe-call-2`, …, and every call of both stays.
#[test]
fn two_runs_imported_into_one_session_keep_all_their_calls() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let runs: Vec<Vec<Event>> = ["ctf-forensics-flash.traj", "ctf-rev-rock.traj"]
        .iter()
        .map(|name| events(&std::fs::read_to_string(trajectory(name)).unwrap()))
        .collect();
    for run in &runs {
        session.ingest(run.clone()).unwrap();
    }
    let shape = |sent: Vec<Sent>| -> Vec<(String, String)> {
        sent.into_iter().map(|s| (s.tool, s.result)).collect()
    };
    for target in Target::ALL {
        let expected: Vec<(String, String)> = runs
            .iter()
            .flat_map(|run| shape(sent(run.clone(), target)))
            .collect();
        assert_eq!(expected.len(), 16, "{target:?}: 4 calls, then 12");
        let prepared = session
            .prepare(&PrepareRequest::new("gpt-4o", target))
            .unwrap();
        let got = shape(interactions(target, &prepared.payload.to_value()));
        assert_eq!(got, expected, "{target:?}");
    }
}

/// Two outputs too large for the context, of two calls under one id: each
/// is evicted to a file of its own, and each preview names the one to read.
#[test]
fn evicted_outputs_of_a_reused_id_keep_a_file_each() {
    let output =
        |word: &str| -> String { (0..6_000).map(|i| format!("{word} line {i}\n")).collect() };
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let ls = |dir: &str| serde_json::json!({"cmd": format!("ls -R {dir}")});
    let report = session
        .ingest(vec![
            Event::user("List both trees."),
            Event::tool_call("call_0", "bash", ls("alpha")),
            Event::tool_result("call_0", output("alpha")),
            Event::tool_call("call_0", "bash", ls("beta")),
            Event::tool_result("call_0", output("beta")),
        ])
        .unwrap();
    assert_eq!(report.evicted, 2);
    let prepared = session
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let dir = store.session_paths(&agent, session.id()).evicted();
    let sent = interactions(Target::OpenAiChat, &prepared.payload.to_value());
    assert_eq!(sent.len(), 2);
    for (interaction, word) in sent.iter().zip(["alpha", "beta"]) {
        let named = interaction
            .result
            .split(r#""call_id":""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no call id in the preview: {}", interaction.result));
        let page = agentmem::files::evicted::read_evicted(&dir, named, 5_990, 10).unwrap();
        assert_eq!(
            page.text,
            (5_990..6_000)
                .map(|i| format!("{word} line {i}\n"))
                .collect::<String>()
        );
    }
}

/// A compaction folds the early uses of a reused id away; the calls that
/// remain in the view keep their own results, in every renderer.
#[test]
fn a_compacted_session_that_reuses_an_id_keeps_the_pairs_that_remain() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    for turn in 0..12 {
        session
            .ingest(vec![
                Event::user(format!("Run check number {turn}.")),
                Event::tool_call(
                    "call_0",
                    "bash",
                    serde_json::json!({"cmd": format!("check {turn}")}),
                ),
                Event::tool_result("call_0", format!("check {turn} passed")),
                Event::assistant(format!("Check {turn} passed.")),
            ])
            .unwrap();
    }
    let report = session
        .compact(&agentmem::CompactOptions::default())
        .unwrap();
    assert!(report.applied);
    for target in Target::ALL {
        let prepared = session
            .prepare(&PrepareRequest::new("gpt-4o", target))
            .unwrap();
        let sent = interactions(target, &prepared.payload.to_value());
        assert!(
            sent.len() >= 4,
            "{target:?}: the raw tail's calls: {sent:?}"
        );
        let last = sent.len() - 1;
        for (index, interaction) in sent.iter().enumerate() {
            let turn = 12 - (sent.len() - index);
            assert!(
                interaction.result.contains(&format!("check {turn} passed")),
                "{target:?}: call {index} of {last} is answered by {:?}",
                interaction.result
            );
        }
    }
}
