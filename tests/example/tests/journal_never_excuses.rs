//! What my worker journals can add a finding, never take one away: the same worker with its
//! effects' journal lines removed is never judged more harshly than with them.

use leasesim::scenarios::ALL;
use leasesim::{run, Invariant, Machines, ScenarioDef};
use leasesim_example::{machines, Bug, Worker};
use leasesim_protocol::Event;

mod common;

fn silent(bug: Bug) -> Machines {
    Machines::new("payments-worker-silent").with_worker("payments-worker-silent", move |spec| {
        let worker = Worker::new(spec.config.clone(), bug);
        let hidden = |e: &Event| matches!(e, Event::EffectStarted { .. });
        common::Hiding { worker, hidden }
    })
}

fn breaks_i5(m: &Machines, scenario: &ScenarioDef, seed: u64) -> Option<String> {
    let setup = scenario.build(seed, m.setup_variant());
    let r = run(&setup, seed, m);
    r.findings
        .iter()
        .find(|f| f.invariant == Invariant::QuiescentHolder)
        .map(|f| f.message.clone())
}

#[test]
fn a_worker_that_journals_is_never_judged_less_than_one_that_does_not() {
    let bug = Bug::PaysInJeopardy;
    let (journaled, quiet) = (machines::my_worker(bug), silent(bug));
    let mut both = 0;
    let mut in_jeopardy = 0;
    for scenario in ALL {
        for seed in 0..60 {
            let without = breaks_i5(&quiet, scenario, seed);
            let with = breaks_i5(&journaled, scenario, seed);
            if let Some(without) = &without {
                let with = with.as_deref().unwrap_or_else(|| {
                    panic!(
                        "{} seed {seed}: caught without the journal lines ({without}), passed with them",
                        scenario.name
                    )
                });
                both += 1;
                in_jeopardy += usize::from(with.contains("in jeopardy"));
            }
        }
    }
    println!("{both} runs broke I5 without the journal lines; {in_jeopardy} named the jeopardy");
    assert!(both > 0, "the bug is caught somewhere");
    assert!(in_jeopardy > 0, "as paying in jeopardy");
}
