//! Long-term memory in every context: MEMORY.md and project files.

mod common;

use agentmem::memory::project::MemorySettings;
use agentmem::{AgentId, CompactOptions, Config, Durability, Event, PrepareRequest, Store, Target};

#[test]
fn memory_and_project_files_are_in_every_context_and_survive_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("AGENT.md"),
        "Always run `cargo fmt` before committing.",
    )
    .unwrap();
    let mut config = Config::default();
    config.storage.durability = Durability::Os;
    config.memory = Some(MemorySettings {
        project_dirs: vec![project.path().to_path_buf()],
        injected_lines: Some(2),
        ..Default::default()
    });
    let store = Store::with_config(dir.path(), config);
    let agent = AgentId::default();
    let notebook = store.notebook(&agent);
    notebook.append("- The user prefers short answers.\n- Deploys go through staging.\n- Third line, not injected.", None).unwrap();

    let mut session = store.create_session(&agent, None).unwrap();
    for t in 0..10 {
        session
            .ingest(vec![
                Event::user(format!("question {t}")),
                Event::assistant("answer ".repeat(100)),
            ])
            .unwrap();
    }
    let mut request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    request.system = Some("You are helpful.".into());
    let prepared = session.prepare(&request).unwrap();
    let system = prepared.payload["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.starts_with("You are helpful."), "{system}");
    assert!(
        system.contains("# Project context (always apply)")
            && system.contains("AGENT.md")
            && system.contains("cargo fmt")
    );
    assert!(system.contains("prefers short answers") && system.contains("staging"));
    assert!(!system.contains("Third line") && system.contains("call read_memory for the rest"));
    assert!(
        prepared.stats.sections.memory > 20,
        "{:?}",
        prepared.stats.sections
    );

    session.compact(&CompactOptions::default()).unwrap();
    let after = session.prepare(&request).unwrap();
    assert_eq!(
        after.payload["messages"][0]["content"], system,
        "memory is never compacted away"
    );
}

#[test]
fn every_compaction_leaves_an_episodic_item() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    for t in 0..9 {
        session
            .ingest(vec![
                Event::user(format!("fix bug {t} in src/mod_{t}.rs")),
                Event::assistant("done ".repeat(50)),
            ])
            .unwrap();
    }
    session
        .compact(&CompactOptions {
            focus: Some("bugs".into()),
            ..Default::default()
        })
        .unwrap();
    let episodes = agentmem::memory::episodic::read_episodes(&store.agent_dir(&agent)).unwrap();
    assert_eq!(episodes.len(), 1);
    let episode = &episodes[0];
    assert_eq!(episode.session_id, session.id().as_str());
    assert_eq!(
        episode.turn_ids,
        ["turn_0001", "turn_0002", "turn_0003", "turn_0004"]
    );
    assert!(episode.summary.contains("## Goal") && episode.summary.contains("fix bug 0"));
    assert_eq!(episode.tags, ["compaction", "manual"]);
    assert!(episode.salience > 0.5);
}

#[test]
fn secrets_planted_in_a_transcript_never_reach_summaries_or_memory() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let secret = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2";
    for t in 0..9 {
        session
            .ingest(vec![
                Event::user(format!("Use the key {secret} and email ops@example.com for deploy {t}; you must keep src/deploy_{t}.rs")),
                Event::tool_call(format!("c{t}"), "bash", serde_json::json!({"cmd": format!("OPENAI_API_KEY={secret} ./deploy.sh")})),
                Event::tool_result(format!("c{t}"), format!("Authorization: Bearer {secret}\ndeployed to https://example.com/app")),
                Event::assistant(format!("Deployed with {secret}.")),
            ])
            .unwrap();
    }
    session.compact(&CompactOptions::default()).unwrap();
    let summary = &session.snapshot().unwrap().base.last().unwrap().content;
    assert!(
        !summary.contains("sk-proj") && !summary.contains("ops@example.com"),
        "{summary}"
    );
    assert!(
        summary.contains("src/deploy_0.rs"),
        "the rest of the summary is kept: {summary}"
    );
    let episodes = std::fs::read_to_string(store.agent_dir(&agent).join("episodic.jsonl")).unwrap();
    assert!(!episodes.contains(secret));
    let written = store
        .notebook(&agent)
        .append(&format!("- deploy key is {secret}"), None)
        .unwrap();
    assert_eq!(written.content, "- deploy key is [REDACTED:secret]\n");
}

#[test]
fn compaction_keeps_facts_with_their_provenance() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    session
        .ingest(vec![Event::user(
            "Ground rules: never push to main, and always use snake_case.",
        )
        .with_id("rules")])
        .unwrap();
    for t in 0..8 {
        session
            .ingest(vec![
                Event::user(format!("step {t}")),
                Event::assistant("ok ".repeat(400)),
            ])
            .unwrap();
    }
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    let facts =
        agentmem::memory::facts::FactStore::new(&store.agent_dir(&agent), Default::default())
            .current()
            .unwrap();
    let rule = facts
        .iter()
        .find(|f| f.fact.contains("never push to main"))
        .unwrap_or_else(|| panic!("{facts:#?}"));
    assert_eq!(rule.provenance.source_event_ids, ["rules"]);
    assert_eq!(
        rule.provenance.session_id.as_deref(),
        Some(session.id().as_str())
    );
    assert_eq!(rule.trust, agentmem::files::records::Trust::User);
    assert_eq!(rule.provenance.extractor, "extractive");
}

#[test]
fn a_new_session_starts_with_what_earlier_sessions_left() {
    let (_dir, store, agent) = common::fresh_store();
    let mut first = store.create_session(&agent, None).unwrap();
    first
        .ingest(vec![
            Event::user("Rule: never deploy on Fridays.").with_id("rule")
        ])
        .unwrap();
    for t in 0..8 {
        first
            .ingest(vec![
                Event::user(format!("migrate table_{t}")),
                Event::assistant("migrated ".repeat(300)),
            ])
            .unwrap();
    }
    assert!(first.compact(&CompactOptions::default()).unwrap().applied);
    let first_id = first.id().to_string();

    let mut second = store.create_session(&agent, None).unwrap();
    second
        .ingest(vec![Event::user("What should I know?")])
        .unwrap();
    let prepared = second
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let live = common::live_context(&prepared.payload);
    assert!(
        live.starts_with("# What you know from earlier sessions"),
        "{live}"
    );
    assert!(live.contains("never deploy on Fridays"));
    assert!(
        live.contains(&format!("## Session {first_id}")) && live.contains("table_0"),
        "{live}"
    );

    // The budget bounds it; 0 turns it off.
    let config = Config {
        memory: Some(MemorySettings {
            cross_session_tokens: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    let quiet = Store::with_config(store.root(), config);
    let mut third = quiet.create_session(&agent, None).unwrap();
    third.ingest(vec![Event::user("hi")]).unwrap();
    let payload = third
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap()
        .payload;
    assert_eq!(payload["messages"][0]["role"], "user");
    assert_eq!(
        payload["messages"].as_array().unwrap().len(),
        1,
        "no live context"
    );
}

#[test]
fn an_ended_session_leaves_a_summary_the_next_session_starts_with() {
    let (_dir, store, agent) = common::fresh_store();
    let mut first = store.create_session(&agent, None).unwrap();
    first
        .ingest(vec![
            Event::user("Migrate the billing cron job to the queue worker; token sk-live-Ab12Cd34Ef56Gh78Ij90"),
            Event::assistant("Moved billing to worker/billing.rs and removed the cron entry."),
        ])
        .unwrap();
    let episode = first.end().unwrap().unwrap();
    assert_eq!(episode.tags, ["session-end"]);
    assert_eq!(episode.turn_ids, ["turn_0001"]);
    assert!(episode.summary.contains("billing"));
    assert!(!episode.summary.contains("sk-live-Ab12Cd34Ef56Gh78Ij90"));
    assert_eq!(
        first.end().unwrap().unwrap(),
        episode,
        "ending twice adds nothing"
    );
    first.close().unwrap();
    let episodes = agentmem::memory::episodic::read_episodes(&store.agent_dir(&agent)).unwrap();
    assert_eq!(episodes.len(), 1);

    let mut next = store.create_session(&agent, None).unwrap();
    let prepared = next
        .prepare(&PrepareRequest::new("gpt-4o", Target::OpenAiChat))
        .unwrap();
    let system = prepared.payload["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("# What you know from earlier sessions"));
    assert!(system.contains("worker/billing.rs"), "{system}");
    let mut empty = store.create_session(&agent, None).unwrap();
    assert!(empty.end().unwrap().is_none());
    next.close().unwrap();
}

/// Credentials of every common shape, as agents meet them in prompts, tool
/// calls and tool output.
const PLANTED_SECRETS: [(&str, &str); 16] = [
    ("openai", "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0"),
    ("anthropic", "sk-ant-api03-Qw3Er4Ty5Ui6Op7As8Df9Gh0Jk"),
    ("aws key id", "AKIAQ3EGZ7R5EXAMPLE2"),
    ("aws secret", "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY9"),
    ("github", "ghp_R7tY2uI9oP4aS6dF8gH1jK3lZ5xC0vB2nM4q"),
    (
        "github fine-grained",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
    ),
    ("stripe", "sk_live_51HqLkJ2eZvKYlo2C9mN8bV7cX6zA"),
    ("hugging face", "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"),
    ("slack", "xoxb-2048-4096-Tq8Wn3Rm5Ks7Lp9Vz1Xy"),
    ("google", "AIzaSyD4x9Vn2Kq7Lm5Pw8Rt3Ys6Uz1Ab0Cd9Ef"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    ),
    ("db password", "Tr0ub4dor-and-3"),
    ("basic auth", "YWRtaW46czNjcjN0LXBhc3M="),
    (
        "private key",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    ("password", "correct-horse-battery-9"),
    ("client secret", "Gq7Wz2Lk9Xp4Rt6Yv1Bn3Mc8"),
];

#[test]
fn no_kind_of_planted_credential_reaches_summaries_facts_or_memory() {
    let (_dir, store, agent) = common::fresh_store();
    let mut session = store.create_session(&agent, None).unwrap();
    let [openai, anthropic, key_id, aws_secret, github, fine_grained, stripe, hf, slack, google, jwt, db, basic, private, password, client] =
        PLANTED_SECRETS.map(|(_, secret)| secret);
    let env = format!(
        "OPENAI_API_KEY={openai}\nANTHROPIC_API_KEY={anthropic}\nAWS_ACCESS_KEY_ID={key_id}\n\
         AWS_SECRET_ACCESS_KEY={aws_secret}\nGITHUB_TOKEN={github}\nGH_PAT={fine_grained}\n\
         STRIPE_KEY={stripe}\nHF_TOKEN={hf}\nSLACK_BOT={slack}\nMAPS={google}\n\
         DATABASE_URL=postgres://admin:{db}@db.internal:5432/app\n"
    );
    let private_key =
        format!("-----BEGIN RSA PRIVATE KEY-----\n{private}\n-----END RSA PRIVATE KEY-----");
    for t in 0..9 {
        session
            .ingest(vec![
                Event::user(format!(
                    "Deploy step {t}: the admin password is {password}, client_secret: {client}; \
                     you must keep src/deploy_{t}.rs"
                )),
                Event::tool_call(format!("r{t}"), "read_file", serde_json::json!({"path": ".env"})),
                Event::tool_result(format!("r{t}"), env.clone()),
                Event::tool_call(
                    format!("c{t}"),
                    "bash",
                    serde_json::json!({"cmd": format!("curl -H 'Authorization: Basic {basic}' -H 'Authorization: Bearer {jwt}' https://api.internal/deploy")}),
                ),
                Event::tool_result(format!("c{t}"), format!("wrote deploy/id_rsa:\n{private_key}\ndeployed")),
                Event::assistant(format!("Deployed step {t} with the key from .env ({openai}).")),
            ])
            .unwrap();
    }
    assert!(session.compact(&CompactOptions::default()).unwrap().applied);
    session.end().unwrap();
    let agent_dir = store.agent_dir(&agent);
    let mut memory = session
        .snapshot()
        .unwrap()
        .base
        .iter()
        .map(|e| e.content.clone())
        .collect::<Vec<_>>()
        .join("\n");
    for file in ["episodic.jsonl", "semantic.jsonl"] {
        memory.push_str(&std::fs::read_to_string(agent_dir.join(file)).unwrap_or_default());
    }
    assert!(
        memory.contains("src/deploy_0.rs"),
        "the rest is kept: {memory}"
    );
    let leaked: Vec<&str> = PLANTED_SECRETS
        .iter()
        .filter(|(_, secret)| memory.contains(secret))
        .map(|(kind, _)| *kind)
        .collect();
    assert!(leaked.is_empty(), "{leaked:?} reached memory:\n{memory}");
}

#[test]
fn an_acknowledgement_keeps_the_question_before_it_as_what_is_recalled() {
    let (_dir, store, agent) = common::fresh_store();
    let mut first = store.create_session(&agent, None).unwrap();
    first
        .ingest(vec![
            Event::user("The auth test is flaky on CI: it times out after 30s."),
            Event::assistant("I raised the auth test timeout to 60s and it passes."),
        ])
        .unwrap();
    // More than the recall budget of other work, acknowledged as it went.
    for step in 0..80 {
        first
            .ingest(vec![
                Event::user(format!("ok, go ahead with step {step}")),
                Event::assistant(format!(
                    "Ok, step {step} is done: module_{step} now reads its settings from \
                     config/module_{step}.toml and the old loader is gone."
                )),
            ])
            .unwrap();
    }
    first.close().unwrap();

    let mut second = store.create_session(&agent, None).unwrap();
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let live = |session: &mut agentmem::Session| {
        common::live_context(&session.prepare(&request).unwrap().payload)
    };
    second
        .ingest(vec![Event::user("Why was the auth test flaky?")])
        .unwrap();
    let asked = live(&mut second);
    assert!(asked.contains("times out after 30s"), "{asked}");
    second
        .ingest(vec![
            Event::assistant("It timed out on CI; the timeout is now 60s."),
            Event::user("Ok, thanks! Go ahead."),
        ])
        .unwrap();
    assert_eq!(
        live(&mut second),
        asked,
        "the acknowledgement changed what is recalled"
    );
}

/// A memory write made through this process shows in the very next call; a
/// change made on disk by another process shows once the last look at the
/// files is older than the recheck interval.
#[test]
fn memory_changes_show_at_once_from_this_process_and_within_the_interval_from_others() {
    let (_dir, store, agent) = common::fresh_store();
    let notebook = store.notebook(&agent);
    notebook.append("- First note.", None).unwrap();
    let mut session = store.create_session(&agent, None).unwrap();
    session.ingest(vec![Event::user("hello")]).unwrap();
    let request = PrepareRequest::new("gpt-4o", Target::OpenAiChat);
    let mut system = || {
        let prepared = session.prepare(&request).unwrap();
        prepared.payload["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(system().contains("First note."));

    notebook
        .append("- Written through the store.", None)
        .unwrap();
    assert!(system().contains("Written through the store."));

    let on_disk = notebook.read().unwrap().content + "\n- Written by another process.";
    std::fs::write(notebook.path(), on_disk).unwrap();
    std::thread::sleep(agentmem::session::MEMORY_RECHECK_INTERVAL);
    assert!(system().contains("Written by another process."));
}

#[test]
fn the_memory_tools_take_content_old_text_and_new_text_in_every_rendered_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), Durability::Os).unwrap();
    let mut session = store.create_session(&AgentId::default(), None).unwrap();
    session.ingest(vec![Event::user("note this")]).unwrap();
    for target in [
        Target::OpenAiChat,
        Target::OpenAiResponses,
        Target::Anthropic,
        Target::Gemini,
    ] {
        let mut request = PrepareRequest::new("gpt-4.1", target);
        request.tools = agentmem::tools::schemas();
        let payload = session.prepare(&request).unwrap().payload.to_value();
        let rendered = payload.to_string();
        for name in ["\"content\"", "\"old_text\"", "\"new_text\""] {
            assert!(rendered.contains(name), "{target:?}: {name} in {rendered}");
        }
        for old in ["\"old\"", "\"new\""] {
            assert!(!rendered.contains(old), "{target:?}: {old} in {rendered}");
        }
    }
}
