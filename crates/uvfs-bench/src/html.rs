//! `reproduce`'s report: SVG charts (plotters' SVG backend, no font
//! libraries: text is left to the browser) and one self-contained HTML
//! page holding the tables and the charts.

use crate::reproduction::Reproduction;
use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::RangedCoordusize;
use plotters::prelude::*;
use std::fmt::Write as _;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const GREY: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
const RED_: RGBColor = RGBColor(0xd6, 0x27, 0x28);

fn err(e: impl std::fmt::Display) -> String {
    format!("chart: {e}")
}

/// Draws into a fresh SVG string of `w` x `h` pixels.
fn svg(
    w: u32,
    h: u32,
    draw: impl FnOnce(&Area<'_>) -> Result<(), String>,
) -> Result<String, String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// The label of a row of a bar chart whose rows are segments.
fn row_label(names: &[String], v: &SegmentValue<usize>) -> String {
    match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            names.get(*i).cloned().unwrap_or_default()
        }
        SegmentValue::Last => String::new(),
    }
}

/// The charts, as (file name, SVG text).
pub fn charts(r: &Reproduction) -> Result<Vec<(String, String)>, String> {
    let mut out = vec![
        ("seeds.svg".to_string(), seeds_chart(r)?),
        ("versus-host.svg".to_string(), versus_chart(r)?),
    ];
    let mut tests: Vec<&str> = r.scaling.iter().map(|p| p.test.as_str()).collect();
    tests.dedup();
    for t in tests {
        out.push((format!("scaling-{t}.svg"), scaling_chart(r, t)?));
    }
    Ok(out)
}

/// The row axis of a bar chart of `n` rows: plotters' `0..k` is `k + 1`
/// segments, so the last row index (`n - 1`) ends the range, and the bar
/// of row `i` spans `Exact(i)..Exact(i + 1)`. One row keeps `0..1` (a
/// range of one value would have no span to map).
fn rows_axis(n: usize) -> SegmentedCoord<RangedCoordusize> {
    let last = if n >= 2 { n - 1 } else { 1 };
    (0..last).into_segmented()
}

/// Change % of B against A per seed row, with its 95 % interval.
fn seeds_chart(r: &Reproduction) -> Result<String, String> {
    // Segment 0 is at the bottom: reversed, the first row is on top.
    let rows: Vec<_> = r.seeds.iter().rev().filter(|s| s.error.is_none()).collect();
    let names: Vec<String> = rows
        .iter()
        .map(|s| {
            // Rows of one test and switch differ by their task count.
            let tasks = match (s.tasks, s.mode.as_str()) {
                (1, _) => String::new(),
                (n, "threads") => format!(", {n} threads"),
                (n, _) => format!(", {n} processes"),
            };
            format!("{} {} {}{tasks}", s.seed, s.test, s.switch)
        })
        .collect();
    let lo = rows
        .iter()
        .map(|s| s.ci_low_pct.min(s.published_low_pct.unwrap_or(0.0)))
        .fold(-5.0f64, f64::min);
    let hi = rows
        .iter()
        .map(|s| s.ci_high_pct.max(s.published_high_pct.unwrap_or(0.0)))
        .fold(5.0f64, f64::max);
    let pad = (hi - lo) * 0.08;
    let n = rows.len().max(1);
    svg(820, 60 + 40 * n as u32, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(
                "seed fast paths: B (on) against A (off), change with its 95% interval",
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(290)
            .build_cartesian_2d((lo - pad)..(hi + pad), rows_axis(n))
            .map_err(err)?;
        c.configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .x_labels(8)
            .x_desc("change of the row's metric, B against A (%)")
            .x_label_formatter(&|x| format!("{x:+.0}%"))
            .y_label_formatter(&|v| row_label(&names, v))
            .draw()
            .map_err(err)?;
        c.draw_series(rows.iter().enumerate().map(|(i, s)| {
            let color = match s.verdict.as_str() {
                "reproduces" => GREEN,
                "opposite" => RED_,
                _ => GREY,
            };
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (s.change_pct, SegmentValue::Exact(i + 1)),
                ],
                color.mix(0.6).filled(),
            );
            bar.set_margin(8, 8, 0, 0);
            bar
        }))
        .map_err(err)?;
        c.draw_series(rows.iter().enumerate().map(|(i, s)| {
            PathElement::new(
                vec![
                    (s.ci_low_pct, SegmentValue::CenterOf(i)),
                    (s.ci_high_pct, SegmentValue::CenterOf(i)),
                ],
                BLACK.stroke_width(2),
            )
        }))
        .map_err(err)?;
        // The seed's published figure: a blue diamond (two joined by a
        // bar for a range) on the row's centre line.
        let published =
            |s: &&crate::reproduction::SeedResult| s.published_low_pct.zip(s.published_high_pct);
        c.draw_series(rows.iter().enumerate().filter_map(|(i, s)| {
            published(s).map(|(lo, hi)| {
                PathElement::new(
                    vec![
                        (lo, SegmentValue::CenterOf(i)),
                        (hi, SegmentValue::CenterOf(i)),
                    ],
                    BLUE.stroke_width(4),
                )
            })
        }))
        .map_err(err)?;
        for (i, s) in rows.iter().enumerate() {
            if let Some((lo, hi)) = published(s) {
                c.draw_series([lo, hi].into_iter().map(|x| {
                    EmptyElement::at((x, SegmentValue::CenterOf(i)))
                        + Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], BLUE.filled())
                }))
                .map_err(err)?;
            }
        }
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Last)],
            BLACK,
        )))
        .map_err(err)?;
        Ok(())
    })
}

/// uvfs / host per test, log scale, with the targets marked.
fn versus_chart(r: &Reproduction) -> Result<String, String> {
    let rows: Vec<_> = r
        .versus
        .iter()
        .rev()
        .filter(|v| v.ratio.is_some())
        .collect();
    let names: Vec<String> = rows.iter().map(|v| v.test.clone()).collect();
    let top = rows
        .iter()
        .filter_map(|v| v.ratio.map(|r| r.max(v.target.unwrap_or(0.0))))
        .fold(10.0f64, f64::max)
        * 1.5;
    let bottom = rows
        .iter()
        .filter_map(|v| v.ratio_low.or(v.ratio))
        .filter(|x| *x > 0.0)
        .fold(1.0f64, f64::min)
        * 0.5;
    let top = rows
        .iter()
        .filter_map(|v| v.ratio_high)
        .fold(top, |a, b| a.max(b * 1.2));
    let n = rows.len().max(1);
    svg(760, 60 + 28 * n as u32, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(
                "uvfs against the host kernel: ops/s ratio, with its spread",
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(90)
            .build_cartesian_2d(
                (bottom..top)
                    .log_scale()
                    .with_key_points(log_keys(bottom, top)),
                rows_axis(n),
            )
            .map_err(err)?;
        c.configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .x_label_formatter(&|x| scale_label(*x, "×"))
            .x_desc("uvfs ops/s ÷ host ops/s (log scale)")
            .y_label_formatter(&|v| row_label(&names, v))
            .draw()
            .map_err(err)?;
        c.draw_series(rows.iter().enumerate().map(|(i, v)| {
            let ratio = v.ratio.unwrap_or(1.0);
            let color = match v.target {
                Some(t) if ratio < t => ORANGE,
                _ => BLUE,
            };
            let mut bar = Rectangle::new(
                [
                    (bottom, SegmentValue::Exact(i)),
                    (ratio, SegmentValue::Exact(i + 1)),
                ],
                color.mix(0.7).filled(),
            );
            bar.set_margin(5, 5, 0, 0);
            bar
        }))
        .map_err(err)?;
        // Error bars: the ratio's spread over the samples.
        c.draw_series(rows.iter().enumerate().filter_map(|(i, v)| {
            v.ratio_low.zip(v.ratio_high).map(|(lo, hi)| {
                PathElement::new(
                    vec![
                        (lo.max(bottom), SegmentValue::CenterOf(i)),
                        (hi, SegmentValue::CenterOf(i)),
                    ],
                    BLACK.stroke_width(2),
                )
            })
        }))
        .map_err(err)?;
        c.draw_series(rows.iter().enumerate().filter_map(|(i, v)| {
            v.target.map(|t| {
                PathElement::new(
                    vec![(t, SegmentValue::Exact(i)), (t, SegmentValue::Exact(i + 1))],
                    RED_.stroke_width(3),
                )
            })
        }))
        .map_err(err)?;
        Ok(())
    })
}

/// The colours of the scaling charts' four lines.
const SCALING_SERIES: [(&str, &str, RGBColor); 4] = [
    ("uvfs", "threads", BLUE),
    ("uvfs", "processes", GREEN),
    ("host", "threads", ORANGE),
    ("host", "processes", RED_),
];

/// One test's scaling: total ops/s over task counts, with each point's
/// spread (one standard deviation of its samples), and the speed-up
/// against one task, for uvfs and the host in both modes. The ops/s axis
/// is linear unless the points span more than a factor of 10 (then log).
fn scaling_chart(r: &Reproduction, test: &str) -> Result<String, String> {
    let pts: Vec<_> = r.scaling.iter().filter(|p| p.test == test).collect();
    let max_tasks = pts.iter().map(|p| p.tasks).max().unwrap_or(1).max(2);
    let m = 1e6;
    let hi = pts
        .iter()
        .map(|p| (p.ops_per_sec + p.stddev) / m)
        .fold(f64::MIN_POSITIVE, f64::max);
    let lo = pts
        .iter()
        .map(|p| (p.ops_per_sec - p.stddev).max(p.ops_per_sec / 2.0) / m)
        .fold(f64::INFINITY, f64::min)
        .min(hi);
    let log = hi / lo.max(f64::MIN_POSITIVE) > 10.0;
    let line = |backend: &str, mode: &str| -> Vec<(f64, f64, f64)> {
        pts.iter()
            .filter(|p| p.backend == backend && p.mode == mode)
            .map(|p| (p.tasks as f64, p.ops_per_sec / m, p.stddev / m))
            .collect()
    };
    let speedups: Vec<Vec<(f64, f64, f64)>> = SCALING_SERIES
        .iter()
        .map(|(b, md, _)| speedups(&line(b, md)))
        .collect();
    let top_speedup = speedups
        .iter()
        .flatten()
        .map(|p| p.1 + p.2)
        .fold(max_tasks as f64, f64::max)
        * 1.1;
    let x_range = 0.8f64..max_tasks as f64 + 0.2;
    svg(960, 380, |root| {
        let (left, right) = root.split_horizontally(480);
        let caption = format!(
            "{test}: total ops/s{}, ± one standard deviation",
            if log { " (log scale)" } else { "" }
        );
        let mut cb = ChartBuilder::on(&left);
        cb.caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70);
        let y_desc = "total ops/s (millions)";
        if log {
            let mut c = cb
                .build_cartesian_2d(
                    x_range.clone(),
                    (lo / 1.5..hi * 1.5)
                        .log_scale()
                        .with_key_points(log_keys(lo / 1.5, hi * 1.5)),
                )
                .map_err(err)?;
            c.configure_mesh()
                .x_desc("tasks")
                .y_desc(y_desc)
                .x_labels(max_tasks)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .max_light_lines(0)
                .y_label_formatter(&|y| scale_label(*y, ""))
                .draw()
                .map_err(err)?;
            for (backend, mode, color) in SCALING_SERIES {
                let l = line(backend, mode);
                if l.is_empty() {
                    continue;
                }
                c.draw_series(LineSeries::new(
                    l.iter().map(|p| (p.0, p.1)),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
                // Whiskers of one standard deviation, and the point.
                c.draw_series(l.iter().map(|&(x, y, sd)| {
                    PathElement::new(
                        vec![(x, (y - sd).max(y / 2.0)), (x, y + sd)],
                        color.stroke_width(2),
                    )
                }))
                .map_err(err)?;
                c.draw_series(
                    l.iter()
                        .map(|&(x, y, _)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(err)?;
            }
        } else {
            let mut c = cb
                .build_cartesian_2d(x_range.clone(), 0.0..hi * 1.1)
                .map_err(err)?;
            c.configure_mesh()
                .x_desc("tasks")
                .y_desc(y_desc)
                .x_labels(max_tasks)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_labels(8)
                .y_label_formatter(&|y| group_f(*y, 1))
                .draw()
                .map_err(err)?;
            for (backend, mode, color) in SCALING_SERIES {
                let l = line(backend, mode);
                if l.is_empty() {
                    continue;
                }
                c.draw_series(LineSeries::new(
                    l.iter().map(|p| (p.0, p.1)),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
                // Whiskers of one standard deviation, and the point.
                c.draw_series(l.iter().map(|&(x, y, sd)| {
                    PathElement::new(
                        vec![(x, (y - sd).max(0.0)), (x, y + sd)],
                        color.stroke_width(2),
                    )
                }))
                .map_err(err)?;
                c.draw_series(
                    l.iter()
                        .map(|&(x, y, _)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(err)?;
            }
        }

        let mut c = ChartBuilder::on(&right)
            .caption(
                format!("{test}: speed-up over 1 task, ± one s.d. (dashed: ideal)"),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range, 0.0f64..top_speedup)
            .map_err(err)?;
        c.configure_mesh()
            .x_desc("tasks")
            .y_desc("speed-up (× one task)")
            .x_labels(max_tasks)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .max_light_lines(0)
            .y_label_formatter(&|y| format!("{y:.1}×"))
            .draw()
            .map_err(err)?;
        c.draw_series(DashedLineSeries::new(
            vec![(1.0, 1.0), (max_tasks as f64, max_tasks as f64)],
            6,
            4,
            BLACK.into(),
        ))
        .map_err(err)?;
        for ((_, _, color), l) in SCALING_SERIES.iter().zip(speedups) {
            if l.is_empty() {
                continue;
            }
            c.draw_series(LineSeries::new(
                l.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(err)?;
            c.draw_series(l.iter().filter(|p| p.2 > 0.0).map(|&(x, y, e)| {
                PathElement::new(
                    vec![(x, (y - e).max(0.0)), (x, y + e)],
                    color.stroke_width(2),
                )
            }))
            .map_err(err)?;
            c.draw_series(
                l.into_iter()
                    .map(|(x, y, _)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(err)?;
        }
        Ok(())
    })
}

/// A series' speed-up over one task, from its (tasks, mean, standard
/// deviation) points: (tasks, speed-up, spread). The speed-up is a ratio of
/// two means, so its spread is one standard deviation of each propagated to
/// first order, ratio × sqrt((sd / mean)² + (sd1 / mean1)²); none at one
/// task, which is 1 by definition. Empty without a one-task point.
fn speedups(points: &[(f64, f64, f64)]) -> Vec<(f64, f64, f64)> {
    let Some(&(_, one, sd1)) = points.iter().find(|p| p.0 == 1.0) else {
        return Vec::new();
    };
    if one <= 0.0 {
        return Vec::new();
    }
    points
        .iter()
        .map(|&(x, y, sd)| {
            let ratio = y / one;
            let spread = if x == 1.0 || y <= 0.0 {
                0.0
            } else {
                ratio * ((sd / y).powi(2) + (sd1 / one).powi(2)).sqrt()
            };
            (x, ratio, spread)
        })
        .collect()
}

/// `x` with its digits grouped by thousands (`1,234,567`), rounded to
/// `prec` decimals.
pub fn group_f(x: f64, prec: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let s = format!("{:.prec$}", x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), ""), |(i, f)| (i, f));
    let mut out = String::new();
    for (k, ch) in int.chars().enumerate() {
        if k > 0 && (int.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if x < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

/// The ticks of a log axis from `lo` to `hi`: 1, 2 and 5 times each power
/// of ten in the range, so that labels never crowd the top of a decade
/// (plotters' own ticks on a log axis put 6, 7, 8, 9 and 10 a few pixels
/// apart); a range of less than about a decade gets 3, 4, 6 and 8 too.
fn log_keys(lo: f64, hi: f64) -> Vec<f64> {
    let mut keys = Vec::new();
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return keys;
    }
    // A range narrower than a decade or so gets every whole mantissa.
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]] {
        keys.clear();
        let mut decade = 10f64.powi(lo.log10().floor() as i32);
        while decade <= hi {
            for m in mantissas {
                let k = m * decade;
                if k >= lo && k <= hi {
                    keys.push(k);
                }
            }
            decade *= 10.0;
        }
        if keys.len() >= 3 {
            break;
        }
    }
    keys
}

/// A log axis's label: as many decimals as a value below 1 needs (two
/// significant digits), grouped digits above.
fn scale_label(x: f64, unit: &str) -> String {
    let prec = if x >= 10.0 {
        0
    } else if x > 0.0 {
        (1.0 - x.log10().floor()).max(1.0) as usize
    } else {
        1
    };
    format!("{}{unit}", group_f(x, prec))
}

/// A whole number of ops/s, grouped.
fn group(x: f64) -> String {
    group_f(x, 0)
}

/// A legend in HTML: coloured swatches and what they mean.
fn legend(items: &[(&str, &str)]) -> String {
    let mut h = String::from("<p class=\"legend\">");
    for (color, what) in items {
        let _ = write!(
            h,
            "<span class=\"sw\" style=\"background:{color}\"></span>{} ",
            esc(what)
        );
    }
    h.push_str("</p>\n");
    h
}

/// The load averages around a section, as a paragraph.
fn load_line(r: &Reproduction, section: &str) -> String {
    r.load
        .iter()
        .find(|l| l.section == section)
        .map_or(String::new(), |l| {
            format!("<p class=\"load\">Machine {}.</p>\n", esc(&l.text()))
        })
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.prec$}"))
}

/// The HTML page: tables and the charts inline.
pub fn page(r: &Reproduction, charts: &[(String, String)]) -> String {
    let mut h = String::new();
    let chart = |name: &str| {
        charts
            .iter()
            .find(|(n, _)| n == name)
            .map_or(String::new(), |(_, s)| format!("<figure>{s}</figure>\n"))
    };
    let _ = write!(
        h,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>uvfs seed reproduction</title>\n\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;}}\
         table{{border-collapse:collapse;margin:1em 0;}}td,th{{border:1px solid #ccc;padding:3px 8px;}}\
         td.n{{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;}}figure{{margin:1em 0;}}\
         .met{{color:#2ca02c}}.missed{{color:#d62728;font-weight:bold}}\
         .legend{{font-size:90%;}}.sw{{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;vertical-align:middle;}}\
         .load{{color:#555;font-size:90%;}}</style></head><body>\n\
         <h1>uvfs seed reproduction</h1>\n<p>Profile <b>{}</b> ({} A/B rounds of {} s per side, {} s per comparison run), \
         {:.0} s wall time. Machine: {}, {} CPUs, Linux {}. Host runs: real system calls under {} (tmpfs). {}.</p>\n",
        esc(&format!("{:?}", r.profile).to_lowercase()),
        r.budget.rounds,
        r.budget.sample,
        r.budget.run,
        r.wall_seconds,
        esc(&r.machine.cpu),
        r.machine.nproc,
        esc(&r.machine.kernel),
        esc(&r.host_dir),
        esc(&r.fstree),
    );
    h.push_str(
        "<h2>Seeds: fast path off (A) and on (B)</h2>\n<p>Runs interleaved A B A B in one process; \
         all other fast paths on. The interval is a normal approximation of the difference of the means. \
         <i>reproduces</i>: B faster beyond the interval; <i>opposite</i>: B slower beyond it.</p>\n\
         <table><tr><th>seed</th><th>test</th><th>switch</th><th>A ops/s</th><th>B ops/s</th>\
         <th>change</th><th>95% CI</th><th>verdict</th><th>host ops/s</th><th>B/host</th><th>kernel's published figure</th></tr>\n",
    );
    h.push_str(&load_line(r, "seeds"));
    for s in &r.seeds {
        if let Some(e) = &s.error {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td colspan=\"8\">failed: {}</td></tr>",
                s.seed,
                esc(&s.test),
                esc(&s.switch),
                esc(e)
            );
            continue;
        }
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:+.1}%</td><td class=\"n\">{:+.1}% .. {:+.1}%</td><td>{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            s.seed,
            esc(&s.test),
            esc(&s.switch),
            group(s.a_ops_per_sec),
            group(s.b_ops_per_sec),
            s.change_pct,
            s.ci_low_pct,
            s.ci_high_pct,
            esc(&s.verdict),
            s.host_ops_per_sec.map_or("–".into(), group),
            s.host_ops_per_sec
                .map_or_else(|| "–".into(), |x| format!("{:.1}×", s.b_ops_per_sec / x)),
            if s.unit == "ops/s" {
                esc(&s.evidence)
            } else {
                format!("{} (A, B, host in {})", esc(&s.evidence), esc(&s.unit))
            }
        );
    }
    h.push_str("</table>\n");
    h.push_str(&chart("seeds.svg"));
    h.push_str(&legend(&[
        ("#2ca02c", "reproduces (B faster beyond the interval)"),
        ("#7f7f7f", "within noise"),
        ("#d62728", "opposite (B slower beyond the interval)"),
        ("#000", "95% interval of the change"),
        (
            "#1f77b4",
            "◆ the kernel's published figure (a bar: its range)",
        ),
    ]));
    h.push_str(
        "<h2>uvfs against the host kernel</h2>\n<p>All fast paths on; one task in processes mode \
         (getfl: one task in threads mode; fstree and blogbench: their threads). Same test code, same path shapes.</p>\n\
         <table><tr><th>test</th><th>uvfs ops/s</th><th>host ops/s</th><th>ratio</th><th>spread</th><th>target</th></tr>\n",
    );
    h.push_str(&load_line(r, "versus"));
    for v in &r.versus {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}×</td>\
             <td class=\"n\">{}</td><td>{}{}</td></tr>",
            esc(&v.test),
            v.uvfs_ops_per_sec.map_or("–".into(), group),
            v.host_ops_per_sec.map_or("–".into(), group),
            opt(v.ratio, 1),
            v.ratio_low
                .zip(v.ratio_high)
                .map_or("–".into(), |(lo, hi)| format!("{lo:.1} .. {hi:.1}×")),
            v.target.map_or(String::new(), |t| format!("≥ {t}×")),
            v.error
                .as_ref()
                .map_or(String::new(), |e| format!(" (error: {})", esc(e)))
        );
    }
    h.push_str("</table>\n");
    h.push_str(&chart("versus-host.svg"));
    h.push_str(&legend(&[
        ("#1f77b4", "target met, or none"),
        ("#ff7f0e", "target missed"),
        ("#d62728", "| the target"),
        ("#000", "spread: ratio ÷ and × (1 + one standard deviation of each side's samples, relative, combined)"),
    ]));
    h.push_str("<h2>Scaling over tasks</h2>\n");
    h.push_str(&load_line(r, "scaling"));
    if let Some(note) = &r.scaling_note {
        let _ = writeln!(h, "<p>{}</p>", esc(note));
    }
    for (name, svg) in charts {
        if name.starts_with("scaling-") {
            let _ = writeln!(h, "<figure>{svg}</figure>");
        }
    }
    if !r.scaling.is_empty() {
        h.push_str(&legend(&[
            ("#1f77b4", "uvfs threads"),
            ("#2ca02c", "uvfs processes"),
            ("#ff7f0e", "host threads"),
            ("#d62728", "host processes"),
        ]));
    }
    h.push_str("<h2>The lab's targets</h2>\n<table><tr><th>what</th><th>goal</th><th>measured</th><th></th></tr>\n");
    for t in &r.targets {
        let (class, word) = match t.met {
            Some(true) => ("met", "met"),
            Some(false) => ("missed", "missed"),
            None => ("", "not measured"),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"{class}\">{word}</td></tr>",
            esc(&t.what),
            esc(&t.goal),
            opt(t.measured, 2)
        );
    }
    h.push_str(
        "</table>\n<h2>Memory per object</h2>\n<table><tr><th>object</th><th>bytes</th></tr>\n",
    );
    for (what, bytes) in &r.object_sizes {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(what),
            group(*bytes as f64)
        );
    }
    h.push_str("</table>\n");
    preload_section(&mut h, r);
    fuse_section(&mut h, r);
    peers_section(&mut h, r);
    h.push_str(
        "<p>Raw figures: <a href=\"reproduce.json\">reproduce.json</a>; \
         every run as a <code>run --json</code> record: <a href=\"records.json\">records.json</a> \
         (compare two reports with <code>uvfs-bench compare OLD/records.json NEW/records.json</code>).</p>\n\
         </body></html>\n",
    );
    h
}

/// Starts a section titled `title` (HTML): its data if it ran, else
/// `None` once a paragraph says why not (`note`, or "not run").
fn section<'a, T>(
    h: &mut String,
    title: &str,
    data: &'a Option<T>,
    note: &Option<String>,
) -> Option<&'a T> {
    let _ = writeln!(h, "<h2>{title}</h2>");
    if data.is_none() {
        let _ = writeln!(h, "<p>{}</p>", esc(note.as_deref().unwrap_or("not run")));
    }
    data.as_ref()
}

/// The LD_PRELOAD shim's section: the modes' table and the interposition
/// costs, or why it did not run.
fn preload_section(h: &mut String, r: &Reproduction) {
    let Some(p) = section(
        h,
        "The LD_PRELOAD shim: C open/close loop",
        &r.preload,
        &r.preload_note,
    ) else {
        return;
    };
    let _ = writeln!(
        h,
        "<p>will-it-scale's open1 loop (<code>open(O_RDWR)</code> + <code>close</code> of one file) as a C program \
         ({}), shim <code>{}</code>, <code>UVFS_PREFIX={}</code>; {} rounds, the modes interleaved in each; \
         median over the rounds; spread = (max − min) / median. Also in <a href=\"preload.json\">preload.json</a>.</p>",
        esc(&p.cc),
        esc(&p.so),
        esc(&p.prefix),
        p.rounds
    );
    h.push_str(&load_line(r, "preload"));
    let _ = writeln!(
        h,
        "<table><tr><th>mode</th><th>pairs/s</th><th>ns per pair</th><th>spread</th><th>vs host tmpfs</th>\
         <th>target ≥ {}×</th></tr>",
        p.target
    );
    for m in &p.modes {
        let (class, word) = match m.target_met {
            Some(true) => ("met", "met"),
            Some(false) => ("missed", "missed"),
            None => ("", ""),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}%</td>\
             <td class=\"n\">{:.2}×</td><td class=\"{class}\">{word}</td></tr>",
            esc(&m.label),
            group(m.pairs_per_sec),
            m.ns_per_pair.median,
            m.ns_per_pair.spread_pct(),
            m.ratio_vs_host
        );
    }
    h.push_str(
        "</table>\n<p>What the interposition costs per call (host tmpfs, shim loaded minus not; \
         median of the rounds' differences):</p>\n<table><tr><th>call</th><th>without, ns</th>\
         <th>with, ns</th><th>cost, ns</th><th>rounds' min .. max</th></tr>\n",
    );
    for c in &p.interposition {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:+.1}</td>\
             <td class=\"n\">{:+.1} .. {:+.1}</td></tr>",
            esc(&c.call),
            c.without_ns,
            c.with_ns,
            c.cost_ns,
            c.min_ns,
            c.max_ns
        );
    }
    h.push_str("</table>\n");
    if let Some(c) = &p.calls {
        preload_calls_html(h, c);
    }
    if let Some(t) = &p.tree {
        let _ = writeln!(
            h,
            "<p>A process tree ({} archive entries): <code>{}</code>, ms per run, median (min .. max): \
             host tmpfs {:.1} ({:.1} .. {:.1}); under the shim, the tree served over FUSE, {:.1} ({:.1} .. {:.1}): \
             {:.2}× the host's time.</p>",
            t.entries,
            esc(&t.script),
            t.host_ms.median,
            t.host_ms.min,
            t.host_ms.max,
            t.shim_ms.median,
            t.shim_ms.min,
            t.shim_ms.max,
            t.ratio
        );
    }
}

/// The shim's per-call loops: ns per iteration on the host, under the
/// shim and through the library; the first call; the threads' gain.
fn preload_calls_html(h: &mut String, c: &crate::preload_calls::CallsReport) {
    let _ = writeln!(
        h,
        "<p>Per call: {} on the host's tmpfs, under the shim (files under the prefix) and through \
         the library in process; median ns per iteration over the rounds; load average {:.2} before, \
         {:.2} after.</p>\n<table><tr><th>loop</th><th>host</th><th>shim</th><th>library</th>\
         <th>shim vs host</th><th>shim − library</th><th>target</th></tr>",
        esc(&c.cc),
        c.load_before[0],
        c.load_after[0]
    );
    for r in &c.rows {
        let (class, word) = match (r.target, r.met) {
            (Some(t), Some(true)) => ("met", format!("≥ {t}× host: met")),
            (Some(t), _) => ("missed", format!("≥ {t}× host: missed")),
            _ => ("", String::new()),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td>\
             <td class=\"n\">{:.2}×</td><td class=\"n\">{:+.1}</td><td class=\"{class}\">{word}</td></tr>",
            esc(&r.call),
            r.host_ns.median,
            r.shim_ns.median,
            r.library_ns.median,
            r.shim_vs_host,
            r.cost_ns
        );
    }
    h.push_str("</table>\n");
    let f = &c.first;
    let _ = writeln!(
        h,
        "<p>The first uvfs call (a stat of the prefix, which builds the VFS): {:.1} µs ({:.1} .. {:.1}), \
         VmHWM +{:.0} KiB; target ≤ {} µs and ≤ {} KiB: <span class=\"{met}\">{met}</span>.</p>",
        f.shim_us.median,
        f.shim_us.min,
        f.shim_us.max,
        f.shim_hwm_kb.median,
        crate::preload_calls::FIRST_US_TARGET,
        crate::preload_calls::FIRST_KB_TARGET,
        met = if f.met { "met" } else { "missed" }
    );
    if let Some(g) = &c.open_scaling {
        let _ = writeln!(
            h,
            "<p>open1, 4 threads against 1 (pairs per second): host {:.2}×, shim {:.2}×, library {:.2}×; \
             the shim's gain / the library's {:.2} (target ≥ {}: the threads scale as the library's): \
             <span class=\"{met}\">{met}</span>.</p>",
            g.host,
            g.shim,
            g.library,
            g.shim_vs_library,
            crate::preload_calls::SCALING_TARGET,
            met = if g.met { "met" } else { "missed" }
        );
    }
}

/// The peers section: per row each system's ops/s and uvfs / peer, the
/// memory per empty file, what each peer cannot do; or why it did not
/// run.
fn peers_section(h: &mut String, r: &Reproduction) {
    let Some(p) = section(
        h,
        "uvfs against the kernel and the in-memory crates",
        &r.peers,
        &r.peers_note,
    ) else {
        return;
    };
    let _ = writeln!(
        h,
        "<p>{} rounds of {} s per cell, the systems interleaved (their order rotating) in each; \
         median ops/s over the rounds, spread = (max − min) / median; uvfs / x is the ratio of \
         each round's figures, median [min .. max]. Single-file rows on <code>{}</code> below each \
         system's root (the kernel's root is a work directory under /dev/shm, reached through \
         <code>std::fs</code>). {}. Also in <a href=\"peers.json\">peers.json</a>.</p>",
        p.rounds,
        p.seconds,
        esc(&p.path),
        esc(&p.peers_note)
    );
    h.push_str(&load_line(r, "peers"));
    let label = |k: &str| {
        crate::peers::System::from_key(k).map_or_else(|_| k.to_string(), |s| s.label().into())
    };
    h.push_str("<table><tr><th>op</th>");
    for k in &p.systems {
        let _ = write!(h, "<th>{}</th><th>spread</th>", esc(&label(k)));
    }
    for k in p.systems.iter().filter(|k| *k != "uvfs") {
        let _ = write!(h, "<th>uvfs / {}</th>", esc(&label(k)));
    }
    h.push_str("</tr>\n");
    for row in &p.rows {
        let _ = write!(h, "<tr><td>{}</td>", esc(&row.label));
        for c in &row.cells {
            let _ = write!(
                h,
                "<td class=\"n\">{}</td><td class=\"n\">{:.0}%</td>",
                group(c.ops_per_sec.median),
                c.ops_per_sec.spread_pct()
            );
        }
        for c in &row.cells {
            if let Some(x) = &c.uvfs_ratio {
                let class = if x.median >= 1.0 { "met" } else { "missed" };
                let _ = write!(
                    h,
                    "<td class=\"n {class}\">{:.2}× [{:.2} .. {:.2}]</td>",
                    x.median, x.min, x.max
                );
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    if !p.memory.is_empty() {
        h.push_str(
            "<p>Memory per empty file, each system in a fresh process: the allocator's bytes in use \
             (glibc <code>mallinfo2</code>) and the resident set before and after making the files; \
             the kernel: growth of the <code>shmem_inode_cache</code> and <code>dentry</code> slabs \
             (other processes add noise).</p>\n<table><tr><th>system</th><th>files</th>\
             <th>heap B/file</th><th>resident B/file</th><th>kernel slabs B/file</th><th></th></tr>\n",
        );
        for m in &p.memory {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td class=\"n\">{}</td><td>{}</td></tr>",
                esc(&label(&m.system)),
                group(m.files as f64),
                m.heap_bytes_per_file.map_or_else(|| "–".into(), group),
                m.rss_bytes_per_file.map_or_else(|| "–".into(), group),
                m.slab_bytes_per_file.map_or_else(|| "–".into(), group),
                esc(m.note.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str(
        "<p>What each does and does not do (read from the crates' sources):</p>\n<table><tr><th></th>\
         <th>kernel</th><th>uvfs</th><th>vfs MemoryFS</th><th>virtual-fs mem_fs</th></tr>\n",
    );
    for (what, k, u, v, w) in crate::peers::CANNOT {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(what),
            esc(k),
            esc(u),
            esc(v),
            esc(w)
        );
    }
    h.push_str("</table>\n");
}

/// The FUSE section: per test the host's tmpfs, the floor and uvfs, the
/// ratio uvfs / floor, bandwidth, and the goals; or why it did not run.
fn fuse_section(h: &mut String, r: &Reproduction) {
    let Some(f) = section(
        h,
        "Through FUSE: host tmpfs, the floor, uvfs",
        &r.fuse,
        &r.fuse_note,
    ) else {
        return;
    };
    let _ = writeln!(
        h,
        "<p>{}; {} rounds of {} s; median over the rounds. Floor: {}. uvfs: {}. Kernel: {}. Also in <a href=\"fuse.json\">fuse.json</a>.</p>",
        esc(&f.shape),
        f.rounds,
        f.seconds,
        esc(&f.floor_settings),
        esc(&match (&f.uvfs_command, &f.uvfs_skipped) {
            (Some(c), _) => c.clone(),
            (None, Some(why)) => format!("skipped: {why}"),
            (None, None) => "-".into(),
        }),
        esc(&f.kernel_features)
    );
    h.push_str(&load_line(r, "fuse"));
    h.push_str(
        "<table><tr><th>test</th><th>kind</th><th>host ops/s</th><th>floor ops/s</th><th>uvfs ops/s</th>\
         <th>floor / host</th><th>uvfs / host</th><th>uvfs / floor (min .. max)</th><th>MB/s host / floor / uvfs</th></tr>\n",
    );
    let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| "-".to_string(), f);
    for t in &f.tests {
        let side = |b: &str| t.sides.iter().find(|s| s.backend == b);
        let ops = |b: &str| num(side(b).map(|s| s.ops_per_sec.median), &|v| group(v));
        let pct = |b: &str| {
            num(side(b).map(|s| s.vs_host), &|v| {
                format!("{:.1}%", v * 100.0)
            })
        };
        let mb = |b: &str| num(side(b).and_then(|s| s.mb_per_sec), &|v| group(v));
        let ratio = t.uvfs_vs_floor.as_ref().map_or_else(
            || "-".to_string(),
            |r| format!("{:.3} ({:.3} .. {:.3})", r.median, r.min, r.max),
        );
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&t.test),
            esc(&t.kind),
            ops("host"),
            ops("floor"),
            ops("uvfs"),
            pct("floor"),
            pct("uvfs"),
            ratio,
            if t.kind == "bandwidth" {
                format!("{} / {} / {}", mb("host"), mb("floor"), mb("uvfs"))
            } else {
                "-".into()
            }
        );
    }
    h.push_str("</table>\n<table><tr><th>goal</th><th></th><th>measured</th><th></th></tr>\n");
    for g in &f.goals {
        let (class, word) = match g.met {
            Some(true) => ("met", "met"),
            Some(false) => ("missed", "missed"),
            None => ("", "not measured"),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"{class}\">{word}</td></tr>",
            esc(&g.what),
            esc(&g.goal),
            num(g.measured, &|v| format!("{v:.3}"))
        );
    }
    h.push_str("</table>\n");
    for t in f.tests.iter().filter(|t| !t.failures.is_empty()) {
        let _ = writeln!(
            h,
            "<p>{} failures: {}</p>",
            esc(&t.test),
            esc(&t.failures.join("; "))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{esc, group_f, log_keys, preload_calls_html, speedups};

    #[test]
    fn the_shims_per_call_loops_are_shown() {
        let mut h = String::new();
        preload_calls_html(&mut h, &crate::preload_calls::sample_report());
        // Each loop a row; a target met or missed in its colour.
        assert_eq!(h.matches("<tr><td>").count(), 3, "{h}");
        assert!(h.contains("<td class=\"met\">≥ 10× host: met</td>"), "{h}");
        assert!(
            h.contains("<td class=\"missed\">≥ 10× host: missed</td>"),
            "{h}"
        );
        assert!(h.contains("180.0 µs"), "{h}");
        assert!(h.contains("the shim's gain / the library's 0.90"), "{h}");
        assert!(
            h.contains("<span class=\"missed\">missed</span>.</p>"),
            "{h}"
        );
    }

    #[test]
    fn speedups_carry_their_spread() {
        // 1 task: 10 ± 1; 2 tasks: 18 ± 2.4 → 1.8, relative spreads 0.1 and
        // 0.133…, combined 0.1667, so ± 0.3.
        let s = speedups(&[(1.0, 10.0, 1.0), (2.0, 18.0, 2.4)]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], (1.0, 1.0, 0.0));
        assert_eq!(s[1].0, 2.0);
        assert!((s[1].1 - 1.8).abs() < 1e-12, "{s:?}");
        assert!((s[1].2 - 0.3).abs() < 1e-9, "{s:?}");
        // No one-task point, or a zero one: nothing to divide by.
        assert!(speedups(&[(2.0, 18.0, 2.4)]).is_empty());
        assert!(speedups(&[(1.0, 0.0, 0.0), (2.0, 1.0, 0.1)]).is_empty());
    }

    #[test]
    fn groups_digits() {
        assert_eq!(group_f(0.0, 0), "0");
        assert_eq!(group_f(999.0, 0), "999");
        assert_eq!(group_f(1000.0, 0), "1,000");
        assert_eq!(group_f(1234567.4, 0), "1,234,567");
        assert_eq!(group_f(-1234.5, 1), "-1,234.5");
        assert_eq!(group_f(12.345, 2), "12.35");
        assert_eq!(group_f(-0.1, 0), "0");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn log_axis_ticks_are_one_two_five() {
        assert_eq!(log_keys(0.4, 25.0), [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        assert_eq!(log_keys(3.0, 9.0), [3.0, 4.0, 5.0, 6.0, 8.0]);
        assert_eq!(log_keys(1.0, 1.0), Vec::<f64>::new());
        assert_eq!(log_keys(0.0, 10.0), Vec::<f64>::new());
        assert_eq!(log_keys(f64::NAN, 10.0), Vec::<f64>::new());
    }
}
