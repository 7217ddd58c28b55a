//! The nicemu node of the kernel-interop tests (`netns_tcp`, `netns_tonic`): a NIC lcore on
//! DPDK and the host context on top of it, stepped in one loop on the test's thread.

use std::sync::Arc;
use std::time::Duration;

use dataplane::lcore::NicLcore;
use dataplane::port::dpdk::DpdkQueue;
use dataplane::runtime_dpdk::DpdkTopology;
use dataplane::tonic::nic::TonicNic;
use hoststack::{Context, HostConfig};
use offload_api::link::HostEnd;

/// The NIC lcore and the host context (on the lcore's clock). Drop it before the topology it
/// was taken from.
pub struct Node {
    pub nic: NicLcore<DpdkQueue>,
    pub ctx: Context<HostEnd>,
    /// Steps in a row with nothing to do.
    idle: u32,
    /// Idle steps after which each further idle step naps.
    nap_after: u32,
}

impl Node {
    /// Takes the first NIC lcore of `topo` and its host channel, with a host stack of
    /// configuration `host`; idle steps nap after `nap_after` of them in a row.
    pub fn new(topo: &mut DpdkTopology, host: HostConfig, nap_after: u32) -> Node {
        let nic = topo.lcores.remove(0);
        let clock = nic.clock().clone();
        let ctx = Context::new(host, topo.host.remove(0), Arc::new(move || clock.now_ns()));
        Node {
            nic,
            ctx,
            idle: 0,
            nap_after,
        }
    }

    /// The Tonic offload on the NIC's chain.
    pub fn tonic(&self) -> &TonicNic {
        self.nic.offload().expect("the NIC's chain has Tonic")
    }

    /// One NIC iteration and one host-stack run. After a stretch with nothing to do (no
    /// frame, no timer, no application progress: `app_work` is the application's) it naps
    /// briefly, leaving the CPU to python and the kernel on a small machine.
    pub fn step(&mut self, app_work: usize) {
        let w = self.nic.poll_once() + self.ctx.poll() + app_work;
        if w > 0 {
            self.idle = 0;
        } else {
            self.idle += 1;
            if self.idle > self.nap_after {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
}
