//! An RPL-like DODAG, built once per run, and storing-mode forwarding.
//!
//! The DODAG is the shortest-path tree to the root under the objective (ETX = 1 / (PRR_fwd ·
//! PRR_rev) per link, as Contiki's MRHOF with link-layer ACKs; hop count, as OF0; or hop count
//! with ties to the better link, as MRHOF without link-layer ACKs), over links whose PRR in both
//! directions is at least `min_link_prr`. Other ties go to the lowest parent index, so the tree
//! is a pure function of the topology. No control traffic (DIO/DAO) is simulated: the tree is what
//! RPL converges to on a static network, installed before the first packet.
//!
//! Storing mode: every node knows its sub-DODAG. A packet for `dst` goes down to the child
//! whose sub-DODAG holds `dst`, otherwise up to the parent; it turns at the lowest common
//! ancestor of source and destination.

use crate::config::{Objective, RoutingConfig};
use crate::radio::Medium;

const NONE: u16 = u16::MAX;

/// The DODAG and the storing-mode next-hop table.
#[derive(Clone, Debug)]
pub struct Dodag {
    n: usize,
    /// The root.
    pub root: usize,
    /// Preferred parent of every node (`None` for the root).
    pub parent: Vec<Option<usize>>,
    /// Path cost to the root under the objective.
    pub rank: Vec<f64>,
    /// Hops to the root along the tree.
    pub depth: Vec<u32>,
    next: Vec<u16>,
}

impl Dodag {
    /// Build the DODAG rooted at `root`. Fails, naming a node, if some node cannot reach the
    /// root over usable links.
    pub fn build(medium: &Medium, cfg: &RoutingConfig, root: usize) -> Result<Dodag, String> {
        let n = medium.len();
        let cost = |a: usize, b: usize| -> Option<f64> {
            let (f, r) = (medium.prr(a, b), medium.prr(b, a));
            if f < cfg.min_link_prr || r < cfg.min_link_prr {
                return None;
            }
            Some(match cfg.objective {
                Objective::Etx => 1.0 / (f * r),
                Objective::Hops | Objective::HopsLink => 1.0,
            })
        };
        // On equal cost: the lowest parent index, or (hops-link) the better link first.
        let quality = |a: usize, b: usize| medium.prr(a, b) * medium.prr(b, a);
        let preferred = |v: usize, u: usize, p: usize| match cfg.objective {
            Objective::HopsLink => {
                let (qu, qp) = (quality(v, u), quality(v, p));
                qu > qp + 1e-12 || ((qu - qp).abs() <= 1e-12 && u < p)
            }
            _ => u < p,
        };
        let mut rank = vec![f64::INFINITY; n];
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut done = vec![false; n];
        rank[root] = 0.0;
        // O(n²) Dijkstra: deterministic, and n is at most a thousand.
        for _ in 0..n {
            let mut u = usize::MAX;
            for v in 0..n {
                if !done[v] && rank[v].is_finite() && (u == usize::MAX || rank[v] < rank[u] - 1e-9) {
                    u = v;
                }
            }
            if u == usize::MAX {
                break;
            }
            done[u] = true;
            for v in 0..n {
                if done[v] || v == u {
                    continue;
                }
                if let Some(c) = cost(v, u) {
                    let r = rank[u] + c;
                    let better =
                        r < rank[v] - 1e-9 || (r <= rank[v] + 1e-9 && parent[v].is_some_and(|p| preferred(v, u, p)));
                    if better {
                        rank[v] = r;
                        parent[v] = Some(u);
                    }
                }
            }
        }
        if let Some(v) = (0..n).find(|&v| !rank[v].is_finite()) {
            return Err(format!(
                "node {v} cannot reach the DODAG root {root} over links with PRR >= {}: the topology is disconnected \
                 at this spacing and radio range",
                cfg.min_link_prr
            ));
        }
        let depth: Vec<u32> = (0..n)
            .map(|v| {
                let (mut d, mut x) = (0, v);
                while let Some(p) = parent[x] {
                    d += 1;
                    x = p;
                }
                d
            })
            .collect();
        // Storing-mode table: default route up; down along each destination's ancestor chain.
        let mut next = vec![NONE; n * n];
        for at in 0..n {
            if let Some(p) = parent[at] {
                for dst in 0..n {
                    next[at * n + dst] = p as u16;
                }
            }
            next[at * n + at] = NONE;
        }
        for dst in 0..n {
            let mut child = dst;
            while let Some(p) = parent[child] {
                next[p * n + dst] = child as u16;
                child = p;
            }
        }
        Ok(Dodag { n, root, parent, rank, depth, next })
    }

    /// Next hop from `at` toward `dst` (`None` when `at == dst`).
    pub fn next_hop(&self, at: usize, dst: usize) -> Option<usize> {
        let h = self.next[at * self.n + dst];
        (h != NONE).then_some(h as usize)
    }

    /// The full path from `src` to `dst`, both included.
    pub fn route(&self, src: usize, dst: usize) -> Vec<usize> {
        let mut path = vec![src];
        let mut at = src;
        while let Some(h) = self.next_hop(at, dst) {
            path.push(h);
            at = h;
            if path.len() > self.n {
                break; // unreachable for a tree; bounds the loop regardless
            }
        }
        path
    }

    /// Hops from `src` to `dst`.
    pub fn hops(&self, src: usize, dst: usize) -> u32 {
        (self.route(src, dst).len() - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RadioConfig;
    use crate::topology::Topology;

    fn dodag(spec: &str, objective: Objective, root: usize) -> Dodag {
        let topo = Topology::parse(spec, 10.0).unwrap();
        let m = Medium::new(&topo, &RadioConfig::default());
        Dodag::build(&m, &RoutingConfig { objective, ..RoutingConfig::default() }, root).unwrap()
    }

    #[test]
    fn grid3_etx_tree_uses_straight_links() {
        // 6 7 8
        // 3 4 5
        // 0 1 2      root 4 at the centre
        let d = dodag("grid:3", Objective::Etx, 4);
        // Diagonals (PRR 0.586, ETX 2.9) lose to two clean hops (ETX 2): corners go via the
        // lowest-index side neighbour.
        assert_eq!(d.parent, vec![Some(1), Some(4), Some(1), Some(4), None, Some(4), Some(3), Some(4), Some(5)]);
        assert_eq!(d.depth, vec![2, 1, 2, 1, 0, 1, 2, 1, 2]);
        // Sink in corner 0: from 8 up to the root, then down through 1.
        assert_eq!(d.route(8, 0), vec![8, 5, 4, 1, 0]);
        assert_eq!(d.route(2, 0), vec![2, 1, 0]);
        assert_eq!(d.route(0, 6), vec![0, 1, 4, 3, 6]);
        assert_eq!(d.hops(6, 0), 4);
    }

    #[test]
    fn hop_objective_takes_usable_diagonals() {
        let mut cfg = RoutingConfig { objective: Objective::Hops, min_link_prr: 0.5, ..RoutingConfig::default() };
        let topo = Topology::parse("grid:3", 10.0).unwrap();
        let m = Medium::new(&topo, &RadioConfig::default());
        let d = Dodag::build(&m, &cfg, 4).unwrap();
        assert!(d.depth.iter().all(|&x| x <= 1));
        cfg.min_link_prr = 0.9;
        let d = Dodag::build(&m, &cfg, 4).unwrap();
        assert_eq!(d.depth[0], 2);
        // The 6x6 grid: the root at index 14 reaches the far corner 35 in 6 hops.
        let d = dodag("grid:6", Objective::Etx, 14);
        assert_eq!(d.depth[35], 6);
        assert_eq!(d.hops(35, 0), 10);
    }

    #[test]
    fn disconnected_topology_is_an_error() {
        let topo = Topology::parse("chain:3", 25.0).unwrap();
        let m = Medium::new(&topo, &RadioConfig::default());
        let e = Dodag::build(&m, &RoutingConfig::default(), 1).unwrap_err();
        assert!(e.contains("cannot reach"), "{e}");
    }
}
