//! RPL's control traffic on the nullrdc stack (`routing.rpl.control`, [`crate::rpl`]): each
//! node's DIO Trickle timer and its DAO. The DODAG does not change, so every DIO is
//! consistent: it only counts towards the receivers' redundancy counters.

use super::{below, Ev, Frame, Kind, MeshNet, Ns, BCAST, NONE16};

/// A node's Trickle state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Trickle {
    /// Doublings of the current interval.
    doublings: u32,
    /// Consistent DIOs heard in the current interval.
    counter: u32,
}

impl<P: Copy> MeshNet<P> {
    /// Start every node's Trickle timer at I_min and schedule its DAO (the motes boot at
    /// t = 0 and the DODAG forms at once: the most control traffic a run can carry).
    pub(crate) fn start_rpl(&mut self) {
        let root = self.dodag.root;
        for node in 0..self.nodes.len() as u16 {
            self.dio_new_interval(node, 0);
            if node as usize != root {
                let lat = self.cfg.routing.rpl.dao_latency_ms as Ns * 1_000_000;
                // rpl-timers.c schedule_dao: RPL_DAO_LATENCY / 2 + random % RPL_DAO_LATENCY.
                let t = lat / 2 + below(&mut self.rng_rpl, lat.max(1));
                self.schedule(self.now + t, Ev::DaoSend { node });
            }
        }
    }

    /// Begin an interval of `doublings` doublings at `node`: its DIO at a uniform point of
    /// [I/2, I), its end at I.
    fn dio_new_interval(&mut self, node: u16, doublings: u32) {
        let i = self.cfg.routing.rpl.interval_ns(doublings);
        let t = &mut self.nodes[node as usize].rpl;
        t.doublings = doublings;
        t.counter = 0;
        let fire = i / 2 + below(&mut self.rng_rpl, (i - i / 2).max(1));
        self.schedule(self.now + fire, Ev::DioFire { node });
        self.schedule(self.now + i, Ev::DioInterval { node });
    }

    /// The Trickle timer fired: send a DIO unless `dio_redundancy` were heard.
    pub(crate) fn dio_fire(&mut self, node: u16) {
        let k = self.cfg.routing.rpl.dio_redundancy;
        if k > 0 && self.nodes[node as usize].rpl.counter >= k {
            return;
        }
        let psdu = self.cfg.routing.rpl.dio_psdu_bytes;
        let dio = Frame { dst: BCAST, next: BCAST, psdu, routed: false, kind: Kind::Dio };
        self.ck_local_send(node, dio);
    }

    /// The interval ended: double it (up to I_max).
    pub(crate) fn dio_interval(&mut self, node: u16) {
        let d = (self.nodes[node as usize].rpl.doublings + 1).min(self.cfg.routing.rpl.dio_doublings);
        self.dio_new_interval(node, d);
    }

    /// A consistent DIO was heard.
    pub(crate) fn dio_heard(&mut self, node: u16) {
        let t = &mut self.nodes[node as usize].rpl;
        t.counter = t.counter.saturating_add(1);
    }

    /// Send the node's DAO up to the root (storing mode: forwarded hop by hop).
    pub(crate) fn dao_send(&mut self, node: u16) {
        let psdu = self.cfg.routing.rpl.dao_psdu_bytes;
        let root = self.dodag.root as u16;
        let dao = Frame { dst: root, next: NONE16, psdu, routed: true, kind: Kind::Dao };
        self.ck_local_send(node, dao);
    }
}
