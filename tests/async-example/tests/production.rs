//! The production build: the same worker on real tokio (its clock paused, so the test takes no
//! real time), against an in-memory store.
#![cfg(not(feature = "sim"))]

use leasesim_async_example::store::{
    Action, EffectResult, Lease, LeaseStore, Note, Report, Settings, ToolResult,
};
use leasesim_async_example::worker::{run, Bug};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Default)]
struct Memory {
    log: Arc<Mutex<Vec<String>>>,
    jobs: Arc<Mutex<Vec<u32>>>,
}

impl Memory {
    fn say(&self, s: String) {
        self.log.lock().unwrap().push(s);
    }
}

impl LeaseStore for Memory {
    fn claim(&self) -> impl Future<Output = Option<Lease>> + Send {
        let job = self.jobs.lock().unwrap().pop();
        async move {
            job.map(|job| Lease {
                job,
                token: 1,
                lease_ns: 30_000_000_000,
                actions: vec![
                    Action::Effect { op: 1, receiver: 0 },
                    Action::CallTool { step: 1 },
                ],
                done: 0,
            })
        }
    }
    fn renew(&self, job: u32, _: u64, _: bool) -> impl Future<Output = Option<u64>> + Send {
        self.say(format!("renew {job}"));
        async { Some(30_000_000_000) }
    }
    fn commit(&self, job: u32, _: u64, report: Report) -> impl Future<Output = bool> + Send {
        self.say(format!("commit {job} {report:?}"));
        async { true }
    }
    async fn save(&self, _: u32, _: u64, _: u8) -> bool {
        true
    }
    async fn call_tool(&self, _: u32, _: u64, _: u8) -> ToolResult {
        // A long call: the heartbeat task renews meanwhile.
        tokio::time::sleep(Duration::from_secs(25)).await;
        ToolResult::Ok(7)
    }
    fn effect(
        &self,
        _: u8,
        job: u32,
        op: u32,
        _: u64,
    ) -> impl Future<Output = EffectResult> + Send {
        self.say(format!("effect {job}:{op}"));
        async { EffectResult::Done }
    }
    fn note(&self, _: Note) {}
}

#[test]
fn the_same_worker_runs_on_real_tokio() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let store = Memory::default();
    store.jobs.lock().unwrap().push(3);
    let settings = Settings {
        heartbeat_ns: 10_000_000_000,
        drift_ppm: 500,
        stop_margin_ns: 1_000_000_000,
        call_timeout_ns: 60_000_000_000,
        stage_deadline_ns: 600_000_000_000,
        claim_poll_ns: 1_000_000_000,
        commit_retry_ns: 5_000_000_000,
        commit_attempts: 3,
        start_delay_ns: 0,
    };
    let s = store.clone();
    rt.block_on(async move {
        let worker = tokio::spawn(run(s, settings, Bug::None));
        tokio::time::sleep(Duration::from_secs(60)).await;
        worker.abort();
    });
    let log = store.log.lock().unwrap().clone();
    assert_eq!(
        log,
        ["effect 3:1", "renew 3", "renew 3", "commit 3 Success(7)"]
    );
}
