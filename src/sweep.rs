//! Floor sweeps: how a floor trades the relevant queries it lets through
//! against the noise queries it leaks, over one evaluation run. `carrel
//! eval` collects, per query, the score each floor would judge it by; the
//! operating point is the lowest floor that admits at most a stated share
//! of the noise queries, and `--plot` draws the whole curve.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

/// The share of noise queries a floor may admit at its operating point.
pub const NOISE_TARGET: f64 = 0.01;

/// One query as a floor sees it: the score it would be judged by (`None`:
/// the floor had nothing to judge, so it admits nothing at any value),
/// whether the query is noise, and whether admitting it would be right (the
/// judged candidate is relevant).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Judged {
    pub score: Option<f32>,
    pub noise: bool,
    pub right: bool,
}

/// One floor over one run.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// Which floor, e.g. `topic floor (passage cosine)`.
    pub floor: String,
    /// The floor in use.
    pub current: f32,
    pub points: Vec<Judged>,
}

/// What a floor does at one value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct At {
    pub value: f32,
    /// Relevant queries admitted on a right candidate, of all relevant.
    pub relevant_right: f64,
    /// Relevant queries admitted at all (right or not), of all relevant.
    pub relevant_fired: f64,
    /// Noise queries admitted, of all noise.
    pub noise: f64,
}

impl Sweep {
    pub fn new(floor: impl Into<String>, current: f32) -> Sweep {
        Sweep {
            floor: floor.into(),
            current,
            points: Vec::new(),
        }
    }

    fn counts(&self) -> (usize, usize) {
        let noise = self.points.iter().filter(|p| p.noise).count();
        (self.points.len() - noise, noise)
    }

    /// The floor's effect at `value`.
    pub fn at(&self, value: f32) -> At {
        let (relevant, noise) = self.counts();
        let admitted = |p: &&Judged| p.score.is_some_and(|s| s >= value);
        let share = |n: usize, of: usize| n as f64 / of.max(1) as f64;
        let fired: Vec<&Judged> = self.points.iter().filter(admitted).collect();
        At {
            value,
            relevant_right: share(
                fired.iter().filter(|p| !p.noise && p.right).count(),
                relevant,
            ),
            relevant_fired: share(fired.iter().filter(|p| !p.noise).count(), relevant),
            noise: share(fired.iter().filter(|p| p.noise).count(), noise),
        }
    }

    /// The lowest value (among the scores seen, just above a noise score)
    /// at which at most `target` of the noise queries are admitted; `None`
    /// without noise queries to calibrate on.
    pub fn operating_point(&self, target: f64) -> Option<At> {
        let (_, noise) = self.counts();
        if noise == 0 {
            return None;
        }
        let mut noise_scores: Vec<f32> = self
            .points
            .iter()
            .filter(|p| p.noise)
            .filter_map(|p| p.score)
            .collect();
        noise_scores.sort_by(|a, b| b.total_cmp(a));
        let allowed = (target * noise as f64).floor() as usize;
        // Just above the highest noise score that must be kept out.
        let value = match noise_scores.get(allowed) {
            Some(s) => s.next_up(),
            None => self
                .points
                .iter()
                .filter_map(|p| p.score)
                .fold(f32::INFINITY, f32::min),
        };
        Some(self.at(value))
    }

    /// The curve: the floor's effect at every score seen, low to high.
    pub fn curve(&self) -> Vec<At> {
        let mut values: Vec<f32> = self.points.iter().filter_map(|p| p.score).collect();
        values.sort_by(|a, b| a.total_cmp(b));
        values.dedup();
        values.into_iter().map(|v| self.at(v)).collect()
    }
}

impl Sweep {
    /// Draws the curve as an SVG at `path`: relevant queries admitted on a
    /// right candidate and noise admitted, in percent, as the floor moves;
    /// the floor in use and the operating point marked. False, and no file,
    /// when no query was judged, so there is no curve to draw.
    pub fn plot(&self, path: &Path, title: &str) -> Result<bool> {
        use plotters::prelude::*;
        let curve = self.curve();
        let (Some(lo), Some(hi)) = (curve.first(), curve.last()) else {
            return Ok(false);
        };
        let (lo, hi) = (lo.value.min(self.current), hi.value.max(self.current));
        let plot_err = |e: &dyn std::fmt::Display| Error::Eval(format!("{}: {e}", path.display()));
        let root = SVGBackend::new(path, (820, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title}: {}", self.floor), ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(lo..hi, 0f64..100f64)
            .map_err(|e| plot_err(&e))?;
        chart
            .configure_mesh()
            .x_desc("floor")
            .y_desc("% of queries admitted")
            .draw()
            .map_err(|e| plot_err(&e))?;
        let series = [
            (
                "relevant, right candidate",
                BLUE,
                curve
                    .iter()
                    .map(|a| (a.value, 100.0 * a.relevant_right))
                    .collect::<Vec<_>>(),
            ),
            (
                "noise",
                RED,
                curve.iter().map(|a| (a.value, 100.0 * a.noise)).collect(),
            ),
        ];
        for (label, colour, points) in series {
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(|e| plot_err(&e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        let mut marks = vec![(format!("in use {:.3}", self.current), self.current, BLACK)];
        if let Some(at) = self.operating_point(NOISE_TARGET) {
            let label = format!("≤{:.0}% noise: {:.3}", 100.0 * NOISE_TARGET, at.value);
            marks.push((label, at.value, GREEN));
        }
        for (label, x, colour) in marks {
            chart
                .draw_series(LineSeries::new(
                    [(x, 0.0), (x, 100.0)],
                    colour.stroke_width(1),
                ))
                .map_err(|e| plot_err(&e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_err(&e))?;
        root.present().map_err(|e| plot_err(&e))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(score: f32, noise: bool, right: bool) -> Judged {
        Judged {
            score: Some(score),
            noise,
            right,
        }
    }

    #[test]
    fn the_operating_point_keeps_the_noise_out_and_says_what_it_costs() {
        let mut s = Sweep::new("test", 0.5);
        s.points = vec![
            judged(0.9, false, true),
            judged(0.7, false, true),
            judged(0.6, false, false),
            judged(0.4, false, true),
            judged(0.65, true, false),
            judged(0.3, true, false),
            Judged {
                score: None,
                noise: false,
                right: false,
            },
        ];
        let at = s.operating_point(0.0).unwrap();
        assert!(at.value > 0.65 && at.value < 0.7, "{at:?}");
        assert_eq!(at.noise, 0.0);
        assert_eq!(at.relevant_right, 2.0 / 5.0);
        assert_eq!(at.relevant_fired, 2.0 / 5.0);
        // One noise query in two may pass: the floor drops below 0.65.
        let at = s.operating_point(0.5).unwrap();
        assert!(at.value > 0.3 && at.value <= 0.4, "{at:?}");
        assert_eq!(at.noise, 0.5);
        assert_eq!(at.relevant_fired, 4.0 / 5.0);
        assert_eq!(s.curve().len(), 6);
        assert!(Sweep::new("no noise", 0.0).operating_point(0.01).is_none());
    }

    /// Regression: `carrel eval --plot` said "wrote" for a floor that had
    /// judged no query, and no file was there.
    #[test]
    fn a_floor_that_judged_nothing_draws_no_file_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.svg");
        assert!(!Sweep::new("empty", 0.5).plot(&path, "t").unwrap());
        assert!(!path.exists());
        let mut s = Sweep::new("one", 0.5);
        s.points.push(judged(0.7, false, true));
        assert!(s.plot(&path, "t").unwrap());
        assert!(path.exists());
    }
}
