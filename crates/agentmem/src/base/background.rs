//! Threads that work beside the caller without the caller waiting on
//! them: the search index's feeder and the background embedder. They run at
//! a lower scheduling priority, so that when the machine has fewer free
//! cores than busy threads the caller's turn gets a core first and they
//! take what is left. Without it a turn that finds every core taken by them
//! waits out their time slices, which is most of what the slowest turns are
//! made of on a two-core machine. The compaction drafter is not one of
//! them: the caller's context shrinks only once its draft lands, so it
//! keeps the caller's priority.

use std::io;
use std::thread::JoinHandle;

/// The nice value of a background thread (0 is the caller's, 19 the
/// lowest): at 10 a busy caller thread gets about nine tenths of a core it
/// shares with one.
pub(crate) const BACKGROUND_NICE: i32 = 10;

/// Starts `work` on a thread named `name` that yields to the caller's
/// threads. The threads it starts inherit its priority.
pub(crate) fn spawn_background<T, F>(name: &str, work: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            yield_to_callers();
            work()
        })
}

/// Lowers this thread's priority to [`BACKGROUND_NICE`], never raising
/// it (a caller already running nicer keeps its value). On Linux a nice
/// value belongs to one thread (the process id form of the call takes a
/// thread id); elsewhere it belongs to the whole process, so the threads
/// keep the caller's priority there. A refusal leaves the priority as it
/// was: it only changes when the work gets done, not what is done.
fn yield_to_callers() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let this = Some(rustix::thread::gettid());
        if let Ok(nice) = getpriority_process(this) {
            let _ = setpriority_process(this, nice.max(BACKGROUND_NICE));
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use rustix::process::getpriority_process;
    use rustix::thread::gettid;

    #[test]
    fn a_background_thread_runs_at_the_background_nice_and_the_caller_keeps_its_own() {
        let caller = getpriority_process(Some(gettid())).unwrap();
        let background = spawn_background("test", || getpriority_process(Some(gettid())).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(background, BACKGROUND_NICE.max(caller));
        let after = getpriority_process(Some(gettid())).unwrap();
        assert_eq!(after, caller);
    }
}
