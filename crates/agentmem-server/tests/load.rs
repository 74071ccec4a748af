//! Concurrent writers over loopback, on sessions of their own and on one
//! shared session: afterwards every event sent is in its log exactly once.

mod support;

use std::time::Duration;

use agentmem_server::load::{self, LoadOptions};
use support::TestServer;

#[test]
fn concurrent_clients_lose_and_duplicate_no_event() {
    let server = TestServer::start();
    let options = LoadOptions {
        base_url: format!("http://{}", server.addr),
        token: None,
        clients: 6,
        turns_per_client: 8,
        max_duration: Duration::from_secs(600),
        model: "gpt-4o".into(),
    };
    let reports = load::run(&options).unwrap();
    assert_eq!(reports.len(), 2);
    for report in &reports {
        assert_eq!(report.errors, 0, "{report:?}");
        assert_eq!(report.events_sent, 6 * 8 * 4, "{report:?}");
        assert_eq!(report.events_logged, report.events_sent, "{report:?}");
        assert_eq!(
            (report.events_lost, report.events_duplicated),
            (0, 0),
            "{report:?}"
        );
    }
    assert_eq!(
        reports[1].sessions, 1,
        "the second phase shares one session"
    );
}
