use agentmem::search::index::DocKind;
use agentmem::storage::Storage;
use agentmem::{AgentId, Embedder, Event, SessionId};

use super::*;
use crate::PgStorage;

/// Set to `1` (as CI does), a database without pgvector fails the tests
/// of the HNSW path instead of skipping them.
const REQUIRE_PGVECTOR_ENV: &str = "AGENTMEM_REQUIRE_PGVECTOR";

const DIMENSIONS: usize = 48;

/// Vectors spread over the sphere: each text's own, from a hash of it.
struct Scattered;

impl Embedder for Scattered {
    fn model(&self) -> &str {
        "scattered"
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| scattered(text, 0)).collect())
    }
}

/// `text`'s vector, moved a little by `nudge` (0: not at all).
fn scattered(text: &str, nudge: u64) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64 * 2.0 - 1.0
    };
    let mut noise = {
        let mut n = nudge;
        move || {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((n >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 0.2
        }
    };
    (0..DIMENSIONS)
        .map(|_| {
            let value = next();
            (if nudge == 0 { value } else { value + noise() }) as f32
        })
        .collect()
}

fn fresh_agent(name: &str) -> AgentId {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    AgentId::new(format!("{name}-{}-{nanos}", std::process::id())).unwrap()
}

fn note(i: usize) -> String {
    format!("note {i} of the nearest-vectors case")
}

type Index = Box<dyn agentmem::storage::search::SearchIndex>;

/// An agent whose one session holds `notes` events, each embedded.
fn embedded_agent(storage: &PgStorage, notes: usize) -> (AgentId, Index) {
    let agent = fresh_agent("nearest");
    let mut writer = storage
        .create_session(&agent, &SessionId::new("s").unwrap())
        .unwrap();
    let events: Vec<Event> = (0..notes).map(|i| Event::user(note(i))).collect();
    for batch in events.chunks(500) {
        writer.append(batch.to_vec()).unwrap();
    }
    let index = storage.search_index(&agent).unwrap();
    index.embed_missing(&Scattered).unwrap();
    (agent, index)
}

/// Whether the database gave the vectors their pgvector copy; without
/// it the HNSW cases skip, loudly, or fail where pgvector is required.
fn has_pgvector(url: &agentmem::config::DatabaseUrl) -> bool {
    let mut client = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    let has: bool = client
        .query_one(crate::migrations::HAS_VECTOR_SEARCH, &[])
        .unwrap()
        .get(0);
    if !has {
        assert!(
            std::env::var(REQUIRE_PGVECTOR_ENV).as_deref() != Ok("1"),
            "{REQUIRE_PGVECTOR_ENV}=1 but the test database has no pgvector: \
             run the tests through `scripts/postgres run`, as root once, to build it"
        );
        eprintln!("\n*** SKIPPED the HNSW case: the test database has no pgvector ***\n");
    }
    has
}

#[test]
fn the_nearest_vectors_come_from_the_hnsw_index_and_score_as_the_exact_scan() {
    let Some(url) = crate::test_database("the HNSW case") else {
        return;
    };
    let storage = PgStorage::connect(&url, Default::default()).unwrap();
    if !has_pgvector(&url) {
        return;
    }
    let notes = 2_400;
    assert!(notes as i64 > EXACT_SCAN_BELOW_VECTORS);
    let (agent, index) = embedded_agent(&storage, notes);
    let events = [DocKind::Event];
    let (mut found, mut asked) = (0, 0);
    for probe in (0..notes).step_by(120) {
        let query = scattered(&note(probe), probe as u64 + 1);
        let exact = index
            .similarities("scattered", &query, &events, None)
            .unwrap();
        let nearest = index
            .nearest("scattered", &query, (&events, None), 10, &[1])
            .unwrap();
        assert!(
            nearest.best(notes).len() <= 11,
            "only the 10 nearest and the one named were read"
        );
        let best = exact.best(10);
        found += nearest.best(10).iter().filter(|d| best.contains(d)).count();
        asked += best.len();
        for doc in nearest.best(10).into_iter().chain([1]) {
            assert_eq!(nearest.of(doc), exact.of(doc), "scored as the exact scan");
        }
    }
    assert!(
        found * 100 >= asked * 95,
        "recall@10 of the index against the exact scan: {found} of {asked}"
    );

    let mut client = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    let mut tx = client.transaction().unwrap();
    tx.batch_execute(&search_settings(10)).unwrap();
    let plan: Vec<String> = tx
        .query(
            &format!("EXPLAIN {}", nearest_statement(DIMENSIONS)),
            &[
                &agent.as_str(),
                &"scattered",
                &vec!["event"],
                &None::<&str>,
                &format!("[{}]", vec!["0.1"; DIMENSIONS].join(",")),
                &10i64,
            ],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        plan.iter()
            .any(|line| line.contains("agentmem_search_vectors_hnsw_")),
        "the statement is served by the model's index: {plan:#?}"
    );
}

#[test]
fn an_agent_with_few_vectors_has_them_all_compared() {
    let Some(url) = crate::test_database("the exact-scan case") else {
        return;
    };
    let storage = PgStorage::connect(&url, Default::default()).unwrap();
    let (_, index) = embedded_agent(&storage, 300);
    let events = [DocKind::Event];
    let query = scattered(&note(7), 3);
    let exact = index
        .similarities("scattered", &query, &events, None)
        .unwrap();
    let nearest = index
        .nearest("scattered", &query, (&events, None), 10, &[])
        .unwrap();
    assert_eq!(nearest.best(300), exact.best(300));
    assert_eq!(exact.best(300).len(), 300);
}

/// A role that may create tables but not the extension connects as ever,
/// its setup of pgvector left undone whole, and keeps the exact scan.
#[test]
fn a_role_that_may_not_create_pgvector_keeps_the_exact_scan() {
    let Some(url) = crate::test_database("the unprivileged-role case") else {
        return;
    };
    PgStorage::connect(&url, Default::default()).unwrap();
    if !has_pgvector(&url) {
        return;
    }
    let name = fresh_agent("limited").as_str().replace('-', "_");
    let mut admin = postgres::Client::connect(url.expose(), postgres::NoTls).unwrap();
    for statement in [
        format!("CREATE ROLE {name} LOGIN PASSWORD 'limited'"),
        format!("CREATE DATABASE {name} OWNER {name}"),
    ] {
        admin.batch_execute(&statement).unwrap();
    }
    let config: postgres::Config = url.expose().parse().unwrap();
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(host) => host.clone(),
        postgres::config::Host::Unix(path) => path.display().to_string(),
    };
    let limited = agentmem::config::DatabaseUrl::new(format!(
        "postgres://{name}:limited@{host}:{}/{name}",
        config.get_ports()[0]
    ));
    let storage = PgStorage::connect(&limited, Default::default());
    let mut client = postgres::Client::connect(limited.expose(), postgres::NoTls).unwrap();
    let has: bool = client
        .query_one(crate::migrations::HAS_VECTOR_SEARCH, &[])
        .unwrap()
        .get(0);
    let extension: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_extension WHERE extname = 'vector'",
            &[],
        )
        .unwrap()
        .get(0);
    let connected = storage.map(drop).map_err(|e| e.to_string());
    drop(client);
    for statement in [
        format!("DROP DATABASE {name} WITH (FORCE)"),
        format!("DROP ROLE {name}"),
    ] {
        admin.batch_execute(&statement).unwrap();
    }
    assert_eq!(connected, Ok(()), "the role connects");
    assert!(!has, "no pgvector copy of the vectors");
    assert_eq!(extension, 0, "the extension is not half made");
}
