use super::*;
use crate::files::paths::MEMORY_FILE;

fn injector(agent_dir: &std::path::Path) -> MemoryInjector {
    MemoryInjector::new(
        agent_dir.to_path_buf(),
        "s1".into(),
        MemorySettings::default(),
        RedactionPolicy::default(),
        None,
        IndexUse::Maintain,
    )
}

fn asking(question: &str) -> Vec<Arc<Event>> {
    vec![Arc::new(Event::user(question))]
}

fn tokenizer() -> Tokenizer {
    Encoding::default().tokenizer()
}

#[test]
fn an_agent_without_memory_gets_none() {
    let root = tempfile::tempdir().unwrap();
    let mut injector = injector(root.path());
    let blocks = injector.blocks(&asking("where is the config?"), None, tokenizer());
    assert_eq!(blocks, MemoryBlocks::default());
    assert_eq!(injector.tokens(), 0);
}

#[test]
fn memory_md_lasts_in_the_system_prompt_when_there_is_nothing_to_recall() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join(MEMORY_FILE),
        "- The tests run with `make check`.\n",
    )
    .unwrap();
    let mut injector = injector(root.path());
    let blocks = injector.blocks(&asking("how do I run the tests?"), None, tokenizer());
    let lasting = blocks.lasting.as_deref().unwrap();
    assert!(lasting.contains("make check"));
    assert_eq!(blocks.recalled, None);
    assert_eq!(injector.tokens(), tokenizer().count(lasting) as u64);
}

#[test]
fn the_blocks_are_rebuilt_only_when_a_file_or_the_question_changed() {
    let root = tempfile::tempdir().unwrap();
    let memory = root.path().join(MEMORY_FILE);
    std::fs::write(&memory, "- first note\n").unwrap();
    let mut injector = injector(root.path());
    let first = asking("what did we decide about logging?");
    injector.blocks(&first, None, tokenizer());
    // Mark what was built, to tell a rebuild from a reuse.
    let cache = injector.cache.as_mut().unwrap();
    cache.own = Some("own, as built".into());
    cache.blocks.lasting = Some("blocks, as built".into());

    let same = injector.blocks(&first, None, tokenizer());
    assert_eq!(same.lasting.as_deref(), Some("blocks, as built"));
    // A new question: the blocks again, from the files as they were read.
    let second = asking("and about the retries?");
    let asked_again = injector.blocks(&second, None, tokenizer());
    assert_eq!(asked_again.lasting.as_deref(), Some("own, as built"));
    // A file changed (this process wrote it: no wait for the next look).
    std::fs::write(&memory, "- second note, a longer one\n").unwrap();
    crate::memory::count_write();
    let reread = injector.blocks(&second, None, tokenizer());
    assert!(reread.lasting.unwrap().contains("second note"));
}

#[test]
fn the_question_is_the_latest_user_message_that_says_something() {
    let events: Vec<Arc<Event>> = [
        Event::user("How do I deploy the service?"),
        Event::assistant("Run the deploy script."),
        Event::user("ok, thanks"),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    assert_eq!(
        latest_question(&events).as_deref(),
        Some("How do I deploy the service?")
    );
    assert_eq!(latest_question(&events[2..]), None);
}
