//! The async shell on madsim: each node of the setup is a madsim node with its own address,
//! the plan's process pauses are madsim's `pause`/`resume`, crashes are `kill` and `restart`
//! (the node's initial task starts the machine again), partitions are `NetSim` link clogs,
//! latency is madsim's, timers are madsim time. A `wire` node carries messages the plan holds
//! or delays, which travel from the network itself.
//!
//! Built only under `--cfg madsim`, in its own target directory (docs/performance.md, "The madsim engine").

use super::{
    client_bound_ns, conclude, node_main, supervise, Env, FabricControl, Port, Shared, ShellRun,
};
use leasesim::machines::Machines;
use leasesim::setup::Setup;
use leasesim_sim::NodeId;
use madsim::net::{Endpoint, NetSim};
use madsim::runtime::{Handle, Runtime};
use madsim::Config;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::mpsc;
use tokio::time::Duration;

const PORT: u16 = 700;
const TAG: u64 = 1;

fn addr(node: NodeId) -> SocketAddr {
    let n = node + 1;
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 1, (n >> 8) as u8, (n & 0xff) as u8)),
        PORT,
    )
}

fn wire_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 2, 0, 1)), PORT)
}

struct Control {
    handle: Handle,
    net: Arc<NetSim>,
    ids: Arc<OnceLock<Vec<madsim::task::NodeId>>>,
    wire_id: Arc<OnceLock<madsim::task::NodeId>>,
    wire: mpsc::UnboundedSender<(Env, u64)>,
}

impl Control {
    fn id(&self, node: NodeId) -> madsim::task::NodeId {
        self.ids
            .get()
            .expect("nodes are built before the plan begins")[node as usize]
    }
}

impl FabricControl for Control {
    fn pause(&self, node: NodeId) {
        self.handle.pause(self.id(node));
    }
    fn resume(&self, node: NodeId) {
        self.handle.resume(self.id(node));
    }
    fn kill(&self, node: NodeId) {
        self.handle.kill(self.id(node));
    }
    fn restart(&self, node: NodeId) {
        self.handle.restart(self.id(node));
    }
    fn clog(&self, from: NodeId, to: NodeId) {
        self.net.clog_link(self.id(from), self.id(to));
    }
    fn unclog(&self, from: NodeId, to: NodeId) {
        self.net.unclog_link(self.id(from), self.id(to));
    }
    fn relay(&self, env: Env, extra_ns: u64) {
        let _ = self.wire.send((env, extra_ns));
    }
    fn shutdown(&self) {
        // A killed node's tasks are dropped with the runtime instead of waiting forever.
        for id in self.ids.get().into_iter().flatten() {
            self.handle.kill(*id);
        }
        if let Some(wire) = self.wire_id.get() {
            self.handle.kill(*wire);
        }
    }
}

struct MadsimPort(Endpoint);

impl Port for MadsimPort {
    async fn send(&self, env: Env) {
        // A clogged link or a dead receiver drops it inside madsim, as a network would.
        let _ = self.0.send_to_raw(addr(env.to), TAG, Box::new(env)).await;
    }
    async fn recv(&self) -> Option<Env> {
        let (payload, _) = self.0.recv_from_raw(TAG).await.ok()?;
        payload.downcast::<Env>().ok().map(|b| *b)
    }
}

/// madsim's configuration for a setup: its latency range, no random loss (loss is the plan's).
pub fn config(setup: &Setup) -> Config {
    let mut config = Config::default();
    let (lo, hi) = (setup.net.latency_min_ns, setup.net.latency_max_ns);
    config.net.send_latency = Duration::from_nanos(lo)..Duration::from_nanos(hi.max(lo) + 1);
    config.net.packet_loss_rate = 0.0;
    config
}

/// The run inside a madsim runtime (the future `Runtime::block_on` runs as the supervisor).
pub async fn run_inside(setup: Setup, seed: u64, machines: Machines) -> ShellRun {
    let handle = Handle::current();
    let ids = Arc::new(OnceLock::new());
    let wire_id = Arc::new(OnceLock::new());
    let (wire_tx, wire_rx) = mpsc::unbounded_channel::<(Env, u64)>();
    let control = Control {
        handle: handle.clone(),
        net: NetSim::current(),
        ids: ids.clone(),
        wire_id: wire_id.clone(),
        wire: wire_tx,
    };
    let sh = Shared::new(&setup, seed, &machines, Box::new(control));
    let bound = client_bound_ns(&setup);
    let n = setup.node_infos().len();
    let mut built = Vec::with_capacity(n);
    for (i, info) in setup.node_infos().iter().enumerate() {
        let sh = sh.clone();
        let node = i as NodeId;
        let h = handle
            .create_node()
            .name(format!("{i}-{}", info.name))
            .ip(addr(node).ip())
            .init(move || {
                let sh = sh.clone();
                async move {
                    match Endpoint::bind(addr(node)).await {
                        Ok(ep) => node_main(sh, MadsimPort(ep), node, bound).await,
                        Err(e) => sh.problem(format!("node {node} cannot bind its address: {e}")),
                    }
                }
            })
            .build();
        built.push(h.id());
    }
    let wire_rx = Arc::new(Mutex::new(Some(wire_rx)));
    let wire = handle
        .create_node()
        .name("wire")
        .ip(wire_addr().ip())
        .init(move || {
            let rx = wire_rx.lock().unwrap_or_else(|p| p.into_inner()).take();
            async move {
                let (Some(mut rx), Ok(ep)) = (rx, Endpoint::bind(wire_addr()).await) else {
                    return;
                };
                let ep = Rc::new(ep);
                while let Some((env, extra)) = rx.recv().await {
                    let ep = ep.clone();
                    madsim::task::spawn_local(async move {
                        tokio::time::sleep(Duration::from_nanos(extra)).await;
                        let _ = ep.send_to_raw(addr(env.to), TAG, Box::new(env)).await;
                    });
                }
            }
        })
        .build();
    let _ = wire_id.set(wire.id());
    let _ = ids.set(built);
    sh.begin(&setup);
    let end = supervise(sh.clone()).await;
    conclude(&sh, &setup, seed, end)
}

/// Runs `setup` with `seed` on `machines` on the madsim engine: one fresh madsim runtime seeded
/// with `seed`.
pub fn run(setup: &Setup, seed: u64, machines: &Machines) -> ShellRun {
    let rt = Runtime::with_seed_and_config(seed, config(setup));
    rt.block_on(run_inside(setup.clone(), seed, machines.clone()))
}

static STASH: Mutex<Option<(Setup, u64, Machines)>> = Mutex::new(None);
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// madsim's own determinism check: the run twice, each on a fresh thread, with madsim
/// comparing every random draw of the second against the first. Returns the trace hash of the
/// second run, or what madsim reported.
pub fn check_determinism(setup: &Setup, seed: u64, machines: &Machines) -> Result<u64, String> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    *STASH.lock().unwrap_or_else(|p| p.into_inner()) =
        Some((setup.clone(), seed, machines.clone()));
    let config = config(setup);
    let out = std::panic::catch_unwind(|| {
        Runtime::check_determinism(seed, config, || async {
            let (setup, seed, machines) = STASH
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .expect("stashed before the check");
            run_inside(setup, seed, machines).await.result.trace_hash()
        })
    });
    out.map_err(|e| {
        let what = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into());
        format!(
            "madsim reported non-determinism: {}",
            what.lines().next().unwrap_or("")
        )
    })
}
