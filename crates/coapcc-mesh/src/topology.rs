//! Topologies as data: node positions in metres, from a generator or a file.
//!
//! | spec | nodes | layout |
//! |---|---|---|
//! | `grid:N`, `grid:NxM` | N·M | row-major, node 0 at the origin (a corner) |
//! | `chain:N` | N | a line along x |
//! | `ring:N` | N | a circle whose neighbours are `spacing` apart |
//! | `dumbbell:K,M` | 2K + M + 2 | two hubs with K leaves each (on a circle of radius `spacing`), joined by a chain of M bridge nodes |
//! | `file:PATH` | lines `x y` (or `x,y`); `#` starts a comment | as given |

use serde::Serialize;

/// Node positions, metres.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Topology {
    /// `(x, y)` of every node; the index is the node id.
    pub positions: Vec<(f64, f64)>,
}

/// Most nodes a topology may have.
pub const MAX_NODES: usize = 1024;

impl Topology {
    /// Parse a topology spec (see the module documentation) with neighbour spacing `spacing`.
    pub fn parse(spec: &str, spacing: f64) -> Result<Topology, String> {
        let spec = spec.trim();
        let (kind, rest) = spec.split_once(':').ok_or_else(|| {
            format!("bad topology {spec:?}: expected grid:N, grid:NxM, chain:N, ring:N, dumbbell:K,M or file:PATH")
        })?;
        let num = |s: &str| -> Result<usize, String> {
            s.trim().parse::<usize>().map_err(|_| format!("bad topology {spec:?}: {s:?} is not a count"))
        };
        let positions: Vec<(f64, f64)> = match kind.trim().to_ascii_lowercase().as_str() {
            "grid" => {
                let (n, m) = match rest.split_once(['x', 'X']) {
                    Some((a, b)) => (num(a)?, num(b)?),
                    None => (num(rest)?, num(rest)?),
                };
                guard(spec, n.saturating_mul(m))?;
                (0..n * m).map(|i| ((i % n) as f64 * spacing, (i / n) as f64 * spacing)).collect()
            }
            "chain" => {
                let n = num(rest)?;
                guard(spec, n)?;
                (0..n).map(|i| (i as f64 * spacing, 0.0)).collect()
            }
            "ring" => {
                let n = num(rest)?;
                guard(spec, n)?;
                if n < 3 {
                    return Err(format!("bad topology {spec:?}: a ring needs at least 3 nodes"));
                }
                let r = spacing / (2.0 * libm::sin(std::f64::consts::PI / n as f64));
                (0..n)
                    .map(|i| {
                        let a = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
                        (r + r * libm::cos(a), r + r * libm::sin(a))
                    })
                    .collect()
            }
            "dumbbell" => {
                let (k, m) = rest.split_once(',').ok_or_else(|| {
                    format!("bad topology {spec:?}: expected dumbbell:K,M (K leaves per side, M bridge nodes)")
                })?;
                let (k, m) = (num(k)?, num(m)?);
                if k == 0 {
                    return Err(format!("bad topology {spec:?}: a dumbbell needs K >= 1 leaves per side"));
                }
                // 2K + M + 2 without wrapping: sizes near usize::MAX saturate and are refused.
                guard(spec, k.saturating_mul(2).saturating_add(m).saturating_add(2))?;
                let hub_l = (spacing, spacing);
                let hub_r = (spacing * (m as f64 + 2.0), spacing);
                let mut p = Vec::with_capacity(2 * k + m + 2);
                let leaves = |p: &mut Vec<(f64, f64)>, hub: (f64, f64), left: bool| {
                    for j in 0..k {
                        // Leaves fan out on the outer half circle, away from the bridge.
                        let a = std::f64::consts::PI * (0.5 + (j as f64 + 0.5) / k as f64);
                        let a = if left { a } else { a + std::f64::consts::PI };
                        p.push((hub.0 + spacing * libm::cos(a), hub.1 + spacing * libm::sin(a)));
                    }
                };
                leaves(&mut p, hub_l, true);
                p.push(hub_l);
                for j in 0..m {
                    p.push((spacing * (j as f64 + 2.0), spacing));
                }
                p.push(hub_r);
                leaves(&mut p, hub_r, false);
                p
            }
            "file" => {
                let text = std::fs::read_to_string(rest.trim())
                    .map_err(|e| format!("cannot read topology file {rest:?}: {e}"))?;
                parse_positions(&text).map_err(|e| format!("topology file {rest:?}: {e}"))?
            }
            other => {
                return Err(format!("unknown topology kind {other:?}: expected grid, chain, ring, dumbbell or file"))
            }
        };
        guard(spec, positions.len())?;
        Ok(Topology { positions })
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the topology has no node.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Euclidean distance between nodes `a` and `b`, metres.
    pub fn distance(&self, a: usize, b: usize) -> f64 {
        let (p, q) = (self.positions[a], self.positions[b]);
        ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt()
    }

    /// The node nearest the centre of the bounding box, lowest index on ties (within 1 mm),
    /// skipping `exclude`.
    pub fn nearest_centre(&self, exclude: usize) -> usize {
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in &self.positions {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        let c = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        let mut best = (f64::MAX, usize::MAX);
        for (i, &(x, y)) in self.positions.iter().enumerate() {
            let d = ((x - c.0).powi(2) + (y - c.1).powi(2)).sqrt();
            if i != exclude && d < best.0 - 1e-3 {
                best = (d, i);
            }
        }
        best.1
    }
}

fn guard(spec: &str, n: usize) -> Result<(), String> {
    if !(2..=MAX_NODES).contains(&n) {
        let got = if n == usize::MAX { format!("more than {MAX_NODES}") } else { n.to_string() };
        return Err(format!("bad topology {spec:?}: needs 2 to {MAX_NODES} nodes, got {got}"));
    }
    Ok(())
}

/// Parse a positions file: one node per line, `x y` or `x,y` in metres; blank lines and `#`
/// comments are ignored.
pub fn parse_positions(text: &str) -> Result<Vec<(f64, f64)>, String> {
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
        let parse = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        match f.as_slice() {
            [x, y] => match (parse(x), parse(y)) {
                (Some(x), Some(y)) => out.push((x, y)),
                _ => return Err(format!("line {}: {line:?} is not two numbers", ln + 1)),
            },
            _ => return Err(format!("line {}: expected `x y`, got {line:?}", ln + 1)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_place_nodes_at_the_spacing() {
        let g = Topology::parse("grid:3", 10.0).unwrap();
        assert_eq!(g.len(), 9);
        assert_eq!(g.positions[4], (10.0, 10.0));
        assert_eq!(g.nearest_centre(0), 4);
        // Even grid: four nodes tie, the lowest index wins.
        assert_eq!(Topology::parse("grid:6", 10.0).unwrap().nearest_centre(0), 14);
        let r = Topology::parse("ring:8", 10.0).unwrap();
        assert!((r.distance(0, 1) - 10.0).abs() < 1e-9 && (r.distance(7, 0) - 10.0).abs() < 1e-9);
        let c = Topology::parse("chain:4", 5.0).unwrap();
        assert_eq!(c.distance(0, 3), 15.0);
        let d = Topology::parse("dumbbell:3,2", 10.0).unwrap();
        assert_eq!(d.len(), 10);
        for leaf in 0..3 {
            assert!((d.distance(leaf, 3) - 10.0).abs() < 1e-9);
        }
        assert_eq!(d.distance(3, 4), 10.0);
        assert_eq!(d.distance(5, 6), 10.0);
    }

    #[test]
    fn bad_specs_and_files_are_explained() {
        let max = usize::MAX;
        let huge = [format!("dumbbell:{max},2"), format!("dumbbell:2,{max}"), format!("grid:{max}x{max}")];
        for bad in huge.iter().map(String::as_str).chain(["dumbbell:0,0", "dumbbell:0,5", "chain:99999999999999999999"])
        {
            assert!(Topology::parse(bad, 10.0).is_err(), "{bad}");
        }
        for bad in ["grid", "grid:x", "grid:1", "ring:2", "mesh:4", "dumbbell:3", "grid:2000"] {
            assert!(Topology::parse(bad, 10.0).is_err(), "{bad}");
        }
        assert_eq!(parse_positions("# x y\n0 0\n10,0\n\n").unwrap(), vec![(0.0, 0.0), (10.0, 0.0)]);
        assert!(parse_positions("0 0 0").unwrap_err().contains("line 1"));
        assert!(parse_positions("0 nan").is_err());
        assert!(Topology::parse("file:/nonexistent/x", 10.0).unwrap_err().contains("cannot read"));
    }
}
