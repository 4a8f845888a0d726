//! A shrunk run tells the story it was shrunk from: its first finding is the original's (the
//! same invariant and sentence, numbers aside), not another finding of the same invariant.

use leasesim::scenarios::ALL;
use leasesim::shrink::{shrink, story};
use leasesim::{run, Machines, Replay, Variant};

#[test]
fn shrinking_keeps_the_first_finding_of_every_known_bad_variant() {
    let mut shrunk = 0;
    for &v in Variant::ALL.iter().filter(|v| **v != Variant::Reference) {
        let m = Machines::variant(v);
        for s in ALL {
            for seed in 0..3 {
                let setup = s.build(seed, m.setup_variant());
                let r = run(&setup, seed, &m);
                let Some(first) = r.findings.first() else {
                    continue;
                };
                if setup.faults.len() < 2 {
                    continue;
                }
                let replay = Replay::record(&setup, seed, true, &r);
                let sh = shrink(&replay).expect("a failing run shrinks");
                let after = sh.replay.run_on(&m).expect("the shrunk replay runs");
                let told = after.findings.first().map(|f| f.message.as_str());
                assert_eq!(
                    told.map(story),
                    Some(story(&first.message)),
                    "{v:?} {} seed {seed}: {} shrank to {told:?} ({} -> {} faults)",
                    s.name,
                    first.message,
                    setup.faults.len(),
                    sh.replay.setup.faults.len()
                );
                shrunk += 1;
            }
        }
    }
    assert!(shrunk > 50, "only {shrunk} runs shrunk");
}
