use super::*;
use proptest::prelude::*;

fn fact(text: &str, trust: Trust) -> NewFact {
    NewFact {
        fact: text.into(),
        tags: vec!["preference".into()],
        confidence: 0.7,
        salience: 0.5,
        provenance: Provenance {
            source_event_ids: vec!["ev1".into()],
            extractor: "test".into(),
            ..Default::default()
        },
        trust,
    }
}

#[test]
fn supersede_keeps_the_history_and_contradictions_do_not_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = FactStore::new(dir.path(), RedactionPolicy::default());
    let Added::Added(id) = store
        .add(fact("Deploys go through staging.", Trust::User))
        .unwrap()
    else {
        panic!()
    };
    // A contradicting fact is added beside it, not over it.
    store
        .add(fact("Deploys skip staging on Fridays.", Trust::Assistant))
        .unwrap();
    assert_eq!(store.current().unwrap().len(), 2);
    let new_id = store
        .supersede(
            &id,
            "Deploys go through staging, then canary.",
            Provenance::default(),
        )
        .unwrap();
    let all = store.all().unwrap();
    let old = all.iter().find(|f| f.id == id).unwrap();
    assert_eq!(old.superseded_by.as_deref(), Some(new_id.as_str()));
    assert!(old.valid_to.is_some());
    assert_eq!(store.current().unwrap().len(), 2);
    assert_eq!(all.len(), 3);
    store.delete(&new_id).unwrap();
    assert!(store.delete(&new_id).is_err());
}

#[test]
fn near_duplicates_merge_and_secrets_never_enter() {
    let dir = tempfile::tempdir().unwrap();
    let store = FactStore::new(dir.path(), RedactionPolicy::default());
    let first = store
        .add(fact(
            "Use API key sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 for staging",
            Trust::User,
        ))
        .unwrap();
    let mut again = fact(
        "use api key sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 for staging.",
        Trust::User,
    );
    again.provenance.source_event_ids = vec!["ev2".into()];
    let Added::Added(id) = first else { panic!() };
    assert_eq!(store.add(again).unwrap(), Added::Merged(id));
    let facts = store.current().unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].provenance.source_event_ids, ["ev1", "ev2"]);
    assert!(!facts[0].fact.contains("sk-proj"), "{}", facts[0].fact);
}

/// What tells redacted facts apart is in the file, not only in this
/// process's memory: after the parsed copy is gone (another process, or
/// a cache that started over), a repeat still merges and a fact that
/// differs only in its secret still stays apart.
#[test]
fn redacted_facts_are_told_apart_by_what_the_file_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let store = FactStore::new(dir.path(), RedactionPolicy::default());
    let said = |key: &str, event: &str| {
        let mut new = fact(&format!("Use API key {key} for staging"), Trust::User);
        new.provenance.source_event_ids = vec![event.into()];
        new
    };
    let Added::Added(id) = store
        .add(said("sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "ev1"))
        .unwrap()
    else {
        panic!()
    };
    LOADED.lock().unwrap().clear();
    assert_eq!(
        store
            .add(said("sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "ev2"))
            .unwrap(),
        Added::Merged(id)
    );
    LOADED.lock().unwrap().clear();
    assert!(matches!(
        store
            .add(said("sk-proj-Qq1Ww2Ee3Rr4Tt5Yy6Uu7Ii8", "ev3"))
            .unwrap(),
        Added::Added(_)
    ));
    let file = std::fs::read_to_string(dir.path().join(SEMANTIC_FILE)).unwrap();
    assert!(!file.contains("sk-proj"), "{file}");
    assert_eq!(store.current().unwrap().len(), 2);
}

fn word_sets() -> impl Strategy<Value = BTreeSet<String>> {
    // Few, short words, so that near sets are common.
    proptest::collection::btree_set("[a-e]{1,2}", 0..14)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn the_near_index_never_misses_a_near_set(
        sets in proptest::collection::vec(word_sets(), 1..40),
        pick in any::<proptest::sample::Index>(),
        dropped in any::<proptest::sample::Index>(),
        added in "[a-e]{1,2}",
    ) {
        // The probe is one of the sets with a word swapped: often near
        // it, yet not starting with the same words.
        let mut probe = sets[pick.index(sets.len())].clone();
        if let Some(word) = probe.iter().nth(dropped.index(probe.len().max(1))).cloned() {
            probe.remove(&word);
        }
        probe.insert(added);
        let mut index = NearIndex::default();
        for (position, words) in sets.iter().enumerate() {
            index.add(position, words);
        }
        let candidates = index.candidates(&probe);
        prop_assert!(candidates.windows(2).all(|w| w[0] < w[1]));
        let near_ones: Vec<usize> = (0..sets.len()).filter(|&i| near(&sets[i], &probe)).collect();
        for position in &near_ones {
            prop_assert!(candidates.contains(position), "{:?} near {:?}", sets[*position], probe);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn near_is_a_jaccard_overlap_of_at_least_the_threshold(
        a in word_sets(),
        b in word_sets(),
    ) {
        let shared = a.intersection(&b).count();
        let union = a.union(&b).count();
        let jaccard_near = union == 0 || shared as f64 >= NEAR_DUPLICATE_JACCARD * union as f64;
        prop_assert_eq!(near(&a, &b), jaccard_near, "{:?} {:?}", a, b);
    }
}

/// A store in a new folder holding one fact (kept alive by the folder
/// handle), and its file.
fn store_with_one_fact() -> (tempfile::TempDir, FactStore, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = FactStore::new(dir.path(), RedactionPolicy::default());
    let path = dir.path().join(SEMANTIC_FILE);
    store
        .add(fact("The user prefers tabs over spaces.", Trust::User))
        .unwrap();
    (dir, store, path)
}

#[test]
fn the_store_appends_new_versions_and_reads_the_last_one() {
    let (_dir, store, path) = store_with_one_fact();
    store
        .add(fact("Deploys go through staging first.", Trust::User))
        .unwrap();
    let mut again = fact("the user prefers tabs over spaces", Trust::User);
    again.provenance.source_event_ids = vec!["ev9".into()];
    store.add(again).unwrap();
    // Two facts, three lines: the merged fact's new version was appended.
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3);
    let read_fresh = || {
        LOADED.lock().unwrap().clear();
        store.all().unwrap()
    };
    let facts = read_fresh();
    assert_eq!(facts.len(), 2);
    assert_eq!(facts[0].provenance.source_event_ids, ["ev1", "ev9"]);
    assert_eq!(
        facts,
        store.all().unwrap(),
        "the kept copy is what the file says"
    );
    // Another writer's change is seen, even one of the same length made
    // at once by an atomic rename.
    let same_length = std::fs::read_to_string(&path)
        .unwrap()
        .replace("tabs", "TABS");
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, same_length).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    assert!(store.all().unwrap()[0].fact.contains("TABS"));
    std::fs::write(&path, "").unwrap();
    assert!(store.all().unwrap().is_empty());
}

#[test]
fn a_torn_last_line_is_rewritten_not_appended_to() {
    let (_dir, store, path) = store_with_one_fact();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"id\":\"fact-0002");
    std::fs::write(&path, &text).unwrap();
    store
        .add(fact("Deploys go through staging first.", Trust::User))
        .unwrap();
    LOADED.lock().unwrap().clear();
    let facts = store.all().unwrap();
    assert_eq!(facts.len(), 2, "{:?}", std::fs::read_to_string(&path));
    assert!(std::fs::read_to_string(&path).unwrap().ends_with("}\n"));
}

#[test]
fn old_versions_never_make_up_most_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FactStore::new(dir.path(), RedactionPolicy::default());
    let path = dir.path().join(SEMANTIC_FILE);
    for round in 0..(3 * STALE_LINES_BEFORE_REWRITE) {
        let mut merged = fact("The user prefers tabs over spaces.", Trust::User);
        merged.provenance.source_event_ids = vec![format!("ev{round}")];
        store.add(merged).unwrap();
    }
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    assert!(
        lines <= STALE_LINES_BEFORE_REWRITE + 2,
        "{lines} lines for one fact"
    );
    LOADED.lock().unwrap().clear();
    let facts = store.all().unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(
        facts[0].provenance.source_event_ids.len(),
        3 * STALE_LINES_BEFORE_REWRITE
    );
}

#[test]
fn the_near_index_offers_only_sets_sharing_a_first_word() {
    let mut index = NearIndex::default();
    for n in 0..200 {
        index.add(
            n,
            &word_set(&format!("deploy service{n} through staging cluster{n}")),
        );
    }
    assert!(index
        .candidates(&word_set("the parser lives in src/parse.rs"))
        .is_empty());
    assert_eq!(
        index.candidates(&word_set("Deploy service7 through staging cluster7.")),
        [7]
    );
}
