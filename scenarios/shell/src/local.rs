//! The async shell on real tokio: one thread, tokio's clock paused (it jumps to the next timer
//! whenever every task waits, so a run takes no wall time and is repeatable), and in-memory
//! channels for the network with latencies drawn from the run's seed.
//!
//! Real tokio cannot pause or kill a group of tasks, so plans with process pauses or crashes
//! are refused here; they run on the madsim engine. This engine shows that the shell is plain
//! tokio code, and runs the fault plans it can express.

use super::{
    client_bound_ns, conclude, node_main, supervise, Env, FabricControl, Port, Shared, ShellRun,
};
use leasesim::machines::Machines;
use leasesim::plan::FaultKind;
use leasesim::setup::Setup;
use leasesim_sim::{NodeId, Prng, Stream};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::Duration;

/// Why a setup cannot run on real tokio, if it cannot.
pub fn unsupported(setup: &Setup) -> Option<String> {
    setup.faults.iter().find_map(|f| match f.kind {
        FaultKind::Pause { .. } | FaultKind::Crash { .. } => Some(format!(
            "scenario {} pauses or crashes a process, which real tokio cannot do; run it on the madsim engine",
            setup.scenario
        )),
        _ => None,
    })
}

/// The network: one inbox per node, a cut set, latencies from the seed.
struct Net {
    inboxes: Vec<mpsc::UnboundedSender<Env>>,
    cut: Mutex<BTreeSet<(NodeId, NodeId)>>,
    rng: Mutex<Prng>,
    latency: (u64, u64),
}

impl Net {
    /// Carries a message after a latency from the seed (plus `extra_ns`); a message sent into
    /// a cut link is dropped, one relayed by the network itself is not.
    fn carry(self: &Arc<Self>, env: Env, extra_ns: u64, relayed: bool) {
        if !relayed
            && self
                .cut
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&(env.from, env.to))
        {
            return;
        }
        let delay = extra_ns
            + self
                .rng
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .range(self.latency.0, self.latency.1);
        let tx = self.inboxes[env.to as usize].clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_nanos(delay)).await;
            let _ = tx.send(env);
        });
    }
}

struct Control(Arc<Net>);

impl FabricControl for Control {
    // Refused before the run (see `unsupported`): nothing reaches these four.
    fn pause(&self, _: NodeId) {}
    fn resume(&self, _: NodeId) {}
    fn kill(&self, _: NodeId) {}
    fn restart(&self, _: NodeId) {}
    fn clog(&self, from: NodeId, to: NodeId) {
        self.0
            .cut
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((from, to));
    }
    fn unclog(&self, from: NodeId, to: NodeId) {
        self.0
            .cut
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(from, to));
    }
    fn relay(&self, env: Env, extra_ns: u64) {
        self.0.carry(env, extra_ns, true);
    }
}

struct LocalPort {
    net: Arc<Net>,
    rx: RefCell<mpsc::UnboundedReceiver<Env>>,
}

impl Port for LocalPort {
    async fn send(&self, env: Env) {
        self.net.carry(env, 0, false);
    }
    #[allow(clippy::await_holding_refcell_ref)]
    async fn recv(&self) -> Option<Env> {
        // Only the node's inbox task receives: the borrow is never contended.
        self.rx.borrow_mut().recv().await
    }
}

/// Runs `setup` with `seed` on `machines` on the async shell over real tokio.
pub fn run(setup: &Setup, seed: u64, machines: &Machines) -> Result<ShellRun, String> {
    if let Some(why) = unsupported(setup) {
        return Err(why);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let out = local.block_on(&rt, async {
        let n = setup.node_infos().len();
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::unbounded_channel()).unzip();
        let net = Arc::new(Net {
            inboxes: txs,
            cut: Mutex::new(BTreeSet::new()),
            // A generator of its own: the World's draws (loss, duplication) use the seed's
            // network stream.
            rng: Mutex::new(Prng::new(seed ^ 0x6c6f_6361_6c6e_6574, Stream::Network)),
            latency: (setup.net.latency_min_ns, setup.net.latency_max_ns),
        });
        let sh = Shared::new(setup, seed, machines, Box::new(Control(net.clone())));
        let bound = client_bound_ns(setup);
        for (i, rx) in rxs.into_iter().enumerate() {
            let port = LocalPort {
                net: net.clone(),
                rx: RefCell::new(rx),
            };
            tokio::task::spawn_local(node_main(sh.clone(), port, i as NodeId, bound));
        }
        sh.begin(setup);
        let end = supervise(sh.clone()).await;
        conclude(&sh, setup, seed, end)
    });
    // Dropping the LocalSet drops every task still waiting.
    drop(local);
    Ok(out)
}
