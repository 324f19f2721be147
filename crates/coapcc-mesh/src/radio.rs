//! The radio medium's static part: who hears whom, how well, how strongly.
//!
//! [`Medium`] precomputes, for every ordered pair of nodes, the packet reception ratio and the
//! received power: of the [`Curve`] and the log-distance model, with each node's neighbours
//! within interference and CCA range; or of Cooja's MRM ([`crate::mrm`]), with the nodes each
//! transmitter can reach. The dynamic part (ongoing transmissions, locks, collisions, capture)
//! lives in the network's medium (`net/medium.rs`), which asks only these tables.

use crate::config::{Curve, RadioConfig};
use crate::mrm::MrmConfig;
use crate::topology::Topology;

/// Packet reception ratio at distance `d` metres (no interference).
///
/// `Linear`: 1 up to `range_full_m`, falling linearly to 0 at `interference_range_m`
/// (default curve: 1 at 10 m, 0.5 at 15 m, 0.586 at a 10 m grid's 14.1 m diagonal, 0 at
/// 20 m). `Step`: 1 up to `range_full_m`, 0 beyond.
pub fn prr(cfg: &RadioConfig, d: f64) -> f64 {
    if d <= cfg.range_full_m + 1e-9 {
        return 1.0;
    }
    match cfg.curve {
        Curve::Step => 0.0,
        Curve::Linear => {
            let span = cfg.interference_range_m - cfg.range_full_m;
            if span <= 0.0 {
                0.0
            } else {
                ((cfg.interference_range_m - d) / span).clamp(0.0, 1.0)
            }
        }
    }
}

/// Received power at distance `d` relative to 1 m, dB (log-distance model).
pub fn power_db(cfg: &RadioConfig, d: f64) -> f64 {
    -10.0 * cfg.path_loss_exponent * libm::log10(d.max(0.1))
}

/// A neighbour as seen from a transmitter.
#[derive(Clone, Copy, Debug)]
pub struct Hearer {
    /// The node.
    pub node: u16,
    /// PRR of frames from the transmitter.
    pub prr: f64,
    /// Received power from the transmitter, linear (mW relative to 1 m; reception-curve
    /// model).
    pub power: f64,
    /// Received power, dBm (MRM) or dB relative to 1 m (reception-curve model).
    pub dbm: f64,
}

/// Precomputed link tables of a topology.
#[derive(Clone, Debug)]
pub struct Medium {
    n: usize,
    prr: Vec<f64>,
    power: Vec<f64>,
    /// For each transmitter: every other node within interference range.
    pub hearers: Vec<Vec<Hearer>>,
    /// For each node: the transmitters its CCA senses.
    pub cca_senders: Vec<Vec<u16>>,
}

impl Medium {
    /// Tables for `topo` under `cfg`. With MRM (`cfg.mrm`) a transmitter's hearers are the
    /// nodes with a positive reception probability, plus, without the capture effect, those
    /// where its power exceeds the background noise (they are disturbed by it).
    pub fn new(topo: &Topology, cfg: &RadioConfig) -> Medium {
        if let Some(mrm) = &cfg.mrm {
            return Medium::mrm(topo, mrm);
        }
        let n = topo.len();
        let mut prr_t = vec![0.0; n * n];
        let mut power = vec![0.0; n * n];
        let mut hearers = vec![Vec::new(); n];
        let mut cca_senders = vec![Vec::new(); n];
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let d = topo.distance(a, b);
                prr_t[a * n + b] = prr(cfg, d);
                if d <= cfg.interference_range_m + 1e-9 {
                    power[a * n + b] = libm::pow(10.0, power_db(cfg, d) / 10.0);
                    hearers[a].push(Hearer {
                        node: b as u16,
                        prr: prr_t[a * n + b],
                        power: power[a * n + b],
                        dbm: power_db(cfg, d),
                    });
                }
                if d <= cfg.cca_range_m + 1e-9 {
                    cca_senders[b].push(a as u16);
                }
            }
        }
        Medium { n, prr: prr_t, power, hearers, cca_senders }
    }

    fn mrm(topo: &Topology, mrm: &MrmConfig) -> Medium {
        let n = topo.len();
        let mut prr_t = vec![0.0; n * n];
        let mut power = vec![0.0; n * n];
        let mut hearers = vec![Vec::new(); n];
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let d = topo.distance(a, b);
                let (p, dbm) = (mrm.prr(d), mrm.power_dbm(d));
                prr_t[a * n + b] = p;
                power[a * n + b] = libm::pow(10.0, dbm / 10.0);
                if p > 0.0 || (!mrm.capture_effect && dbm > mrm.bg_noise_mean_dbm) {
                    hearers[a].push(Hearer { node: b as u16, prr: p, power: power[a * n + b], dbm });
                }
            }
        }
        Medium { n, prr: prr_t, power, hearers, cca_senders: vec![Vec::new(); n] }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there is no node.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// PRR of the link `from` → `to`.
    pub fn prr(&self, from: usize, to: usize) -> f64 {
        self.prr[from * self.n + to]
    }

    /// Linear received power at `to` of a transmission by `from` (reception-curve model: 0
    /// beyond interference range).
    pub fn power(&self, from: usize, to: usize) -> f64 {
        self.power[from * self.n + to]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reception_curve_matches_its_definition() {
        let c = RadioConfig::default();
        assert_eq!(prr(&c, 0.5), 1.0);
        assert_eq!(prr(&c, 10.0), 1.0);
        assert!((prr(&c, 15.0) - 0.5).abs() < 1e-12);
        assert!((prr(&c, 200f64.sqrt()) - (20.0 - 200f64.sqrt()) / 10.0).abs() < 1e-12);
        assert_eq!(prr(&c, 20.0), 0.0);
        assert_eq!(prr(&c, 25.0), 0.0);
        // Monotone non-increasing.
        let mut last = 1.0;
        for i in 0..300 {
            let p = prr(&c, i as f64 * 0.1);
            assert!(p <= last && (0.0..=1.0).contains(&p));
            last = p;
        }
        let s = RadioConfig { curve: Curve::Step, ..c.clone() };
        assert_eq!((prr(&s, 10.0), prr(&s, 10.01)), (1.0, 0.0));
        // Double the distance at exponent 3: 9.03 dB weaker.
        assert!((power_db(&c, 10.0) - power_db(&c, 20.0) - 9.0309).abs() < 1e-3);
    }

    #[test]
    fn hearers_are_within_interference_range() {
        let topo = Topology::parse("grid:3", 10.0).unwrap();
        let m = Medium::new(&topo, &RadioConfig::default());
        // The corner hears its 2 neighbours, its diagonal and the 2 nodes 20 m away.
        let h: Vec<u16> = m.hearers[0].iter().map(|h| h.node).collect();
        assert_eq!(h, vec![1, 2, 3, 4, 6]);
        assert_eq!(m.prr(0, 1), 1.0);
        assert_eq!(m.prr(0, 2), 0.0);
        assert_eq!(m.cca_senders[0].len(), 5);
    }
}
