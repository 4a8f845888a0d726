//! The runtime under a host's inputs: timers on the node's own clock, tasks, a crash, and the
//! bounds that end a runaway node.

use leasesim_tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};
use leasesim_tokio::time::{self, Duration, Instant, MissedTickBehavior};
use leasesim_tokio::{select, spawn, task, Executor, Runaway};
use std::sync::{Arc, Mutex};

const S: u64 = 1_000_000_000;

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn say(log: &Log, what: String) {
    log.lock().unwrap().push(what);
}

fn said(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn a_sleep_ends_when_the_nodes_clock_reaches_its_deadline() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    ex.spawn(async move {
        let start = Instant::now();
        time::sleep(Duration::from_secs(5)).await;
        say(
            &l2,
            format!(
                "woke at {} after {:?}",
                Instant::now().as_nanos(),
                start.elapsed()
            ),
        );
    });
    ex.advance(S).unwrap();
    assert_eq!(ex.next_deadline(), Some(6 * S), "armed on the node's clock");
    ex.advance(6 * S - 1).unwrap();
    assert!(said(&l).is_empty(), "not before its deadline");
    // The host comes late (a pause): the sleep ends at the first input after its deadline.
    ex.advance(9 * S).unwrap();
    assert_eq!(said(&l), ["woke at 9000000000 after 8s"]);
    assert_eq!(ex.next_deadline(), None);
    assert!(!ex.has_tasks());
}

#[test]
fn a_clock_stepped_back_keeps_its_timers_on_that_clock() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    ex.spawn(async move {
        time::sleep_until(Instant::from_nanos(7 * S)).await;
        say(&l2, format!("at {}", Instant::now().as_nanos() / S));
    });
    ex.advance(6 * S).unwrap();
    // A step back by three seconds: the node now reads 3 s and must wait four more.
    ex.advance(3 * S).unwrap();
    assert!(said(&l).is_empty());
    assert_eq!(ex.next_deadline(), Some(7 * S));
    ex.advance(7 * S).unwrap();
    assert_eq!(said(&l), ["at 7"]);
}

#[test]
fn timeout_gives_the_value_or_elapsed_and_timers_of_one_instant_fire_in_arming_order() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    ex.spawn(async move {
        let (tx, rx) = oneshot::channel::<u32>();
        spawn(async move {
            time::sleep(Duration::from_secs(2)).await;
            let _ = tx.send(7);
        });
        // The sender arms its two seconds first: at that instant it runs first, and the value
        // is there when the timeout looks (the timeout looks at its future before its clock).
        task::yield_now().await;
        let tied = time::timeout(Duration::from_secs(2), rx).await;
        say(&l2, format!("tie: {:?}", tied.map(|r| r.unwrap())));
        let (_keep, rx) = oneshot::channel::<u32>();
        let late = time::timeout(Duration::from_secs(1), rx).await;
        say(&l2, format!("late: {}", late.unwrap_err()));
    });
    for t in 0..=4 {
        ex.advance(t * S).unwrap();
    }
    assert_eq!(said(&l), ["tie: Ok(7)", "late: deadline has elapsed"]);
}

#[test]
fn an_interval_bursts_the_ticks_a_pause_made_it_miss_unless_told_otherwise() {
    for (behavior, expected) in [
        // Burst: the ticks scheduled at 2 s and 3 s both fire at 3.5 s, then 4 s and 5 s.
        (MissedTickBehavior::Burst, vec![0, 1, 2, 3, 4, 5]),
        // Delay: the tick scheduled at 2 s fires at 3.5 s; the next is a period later, 4.5 s.
        (MissedTickBehavior::Delay, vec![0, 1, 2, 4]),
        // Skip: the tick scheduled at 2 s fires at 3.5 s; the next is on the grid, 4 s, 5 s.
        (MissedTickBehavior::Skip, vec![0, 1, 2, 4, 5]),
    ] {
        let ex = Executor::new();
        let l = log();
        let l2 = l.clone();
        ex.spawn(async move {
            let mut every = time::interval(Duration::from_secs(1));
            every.set_missed_tick_behavior(behavior);
            loop {
                let tick = every.tick().await;
                say(&l2, format!("{}", tick.as_nanos() / S));
            }
        });
        ex.advance(0).unwrap();
        ex.advance(S).unwrap();
        // Paused from 1 s to 3.5 s: the node's next input is then.
        ex.advance(3 * S + S / 2).unwrap();
        ex.advance(4 * S + S / 2).unwrap();
        ex.advance(5 * S).unwrap();
        // Each tick says when it was scheduled, in whole seconds (4.5 s reads 4).
        let ticks: Vec<u64> = said(&l).iter().map(|s| s.parse().unwrap()).collect();
        assert_eq!(ticks, expected, "{behavior:?}");
    }
}

#[test]
fn tasks_talk_through_tokios_channels_and_locks() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    ex.spawn(async move {
        let (tx, mut rx) = mpsc::channel::<u64>(4);
        let shared = Arc::new(AsyncMutex::new(0u64));
        let s2 = shared.clone();
        let producer = spawn(async move {
            for i in 1..=3u64 {
                time::sleep(Duration::from_secs(i)).await;
                *s2.lock().await += i;
                tx.send(Instant::now().as_nanos() / S).await.unwrap();
            }
            "done"
        });
        while let Some(at) = rx.recv().await {
            say(&l2, format!("got at {at}, sum {}", *shared.lock().await));
        }
        say(&l2, format!("producer: {}", producer.await.unwrap()));
    });
    for t in 0..=7 {
        ex.advance(t * S).unwrap();
    }
    assert_eq!(
        said(&l),
        [
            "got at 1, sum 1",
            "got at 3, sum 3",
            "got at 6, sum 6",
            "producer: done"
        ]
    );
}

#[test]
fn select_takes_the_first_ready_branch_in_written_order() {
    for _ in 0..20 {
        let ex = Executor::new();
        let l = log();
        let l2 = l.clone();
        ex.spawn(async move {
            let (a_tx, a) = oneshot::channel::<&str>();
            let (b_tx, b) = oneshot::channel::<&str>();
            b_tx.send("b").unwrap();
            a_tx.send("a").unwrap();
            let won = select! {
                x = a => x.unwrap(),
                y = b => y.unwrap(),
            };
            say(&l2, won.to_string());
        });
        ex.advance(0).unwrap();
        assert_eq!(said(&l), ["a"], "the same branch every time");
    }
}

#[test]
fn a_crash_drops_every_task_and_timer_and_a_handle_says_cancelled() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    ex.spawn(async move {
        let h = spawn(async {
            time::sleep(Duration::from_secs(60)).await;
        });
        tx.send(h).unwrap();
        time::sleep(Duration::from_secs(30)).await;
        say(&l2, "survived".into());
    });
    ex.advance(0).unwrap();
    assert_eq!(ex.next_deadline(), Some(30 * S));
    ex.clear();
    assert!(!ex.has_tasks());
    assert_eq!(ex.next_deadline(), None);
    ex.advance(100 * S).unwrap();
    assert!(said(&l).is_empty());
    let handle = rx.recv().unwrap();
    assert!(handle.is_finished());
    // A restart runs the start function again on the same executor.
    let l3 = l.clone();
    ex.spawn(async move {
        let err = handle.await.unwrap_err();
        say(&l3, format!("old task: cancelled {}", err.is_cancelled()));
    });
    ex.advance(101 * S).unwrap();
    assert_eq!(said(&l), ["old task: cancelled true"]);
}

#[test]
fn abort_cancels_a_task_and_disarms_its_timer() {
    let ex = Executor::new();
    let l = log();
    let l2 = l.clone();
    ex.spawn(async move {
        let sleeper = spawn(async {
            time::sleep(Duration::from_secs(60)).await;
            1
        });
        task::yield_now().await;
        sleeper.abort();
        say(
            &l2,
            format!("{:?}", sleeper.await.map_err(|e| e.is_cancelled())),
        );
    });
    ex.advance(0).unwrap();
    assert_eq!(said(&l), ["Err(true)"]);
    assert_eq!(
        ex.next_deadline(),
        None,
        "the aborted task's sleep is disarmed"
    );
}

#[test]
fn a_task_that_never_settles_ends_the_input_as_runaway() {
    let ex = Executor::new();
    ex.spawn(async {
        loop {
            task::yield_now().await;
        }
    });
    let Err(Runaway(why)) = ex.advance(0) else {
        panic!("a task that yields forever is runaway");
    };
    assert!(why.contains("kept waking"), "{why}");
}

#[test]
fn reading_the_clock_outside_a_node_is_an_error_in_the_program() {
    let outside = std::panic::catch_unwind(Instant::now).expect_err("no node, no clock");
    let said = outside
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| outside.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(said.contains("outside a simulated node"), "{said}");
}
