//! PNG plots of reports and studies (plotters, bitmap backend): a Gantt chart of a
//! timeline, and line charts such as ε or speedup against the transfer ratio r.
//!
//! Text is drawn in DejaVu Sans, built into the binary (`assets/fonts/DejaVuSans.ttf`,
//! license in `assets/fonts/LICENSE`), so plots draw on a machine with no fonts
//! installed. `CHARIOT_FONT`, the path of a TrueType or OpenType file, draws them in
//! another font instead.

use chariot::report::Report;
use chariot::Stage;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// DejaVu Sans 2.37, unmodified (about 740 KiB).
static EMBEDDED_FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// The family every plot asks for; [`font`] registers it.
const FAMILY: &str = "sans-serif";

/// The font's bytes and where they came from: the file `CHARIOT_FONT` names if it is
/// set and not empty, else the built-in DejaVu Sans.
fn font_bytes(chariot_font: Option<std::ffi::OsString>) -> Result<(&'static [u8], String), String> {
    match chariot_font.filter(|p| !p.is_empty()) {
        Some(path) => {
            let shown = format!("CHARIOT_FONT={}", Path::new(&path).display());
            let bytes =
                std::fs::read(&path).map_err(|e| format!("{shown}: {e} (unset it to use the built-in font)"))?;
            // Registered fonts live for the process: leaking the bytes once is the contract.
            Ok((Box::leak(bytes.into_boxed_slice()), shown))
        }
        None => Ok((EMBEDDED_FONT, "the built-in DejaVu Sans".to_string())),
    }
}

/// Registers the font with plotters, once for the process; every plot calls it first.
fn font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let (bytes, source) = font_bytes(std::env::var_os("CHARIOT_FONT"))?;
        plotters::style::register_font(FAMILY, FontStyle::Normal, bytes)
            .map_err(|_| format!("{source} is not a usable TrueType or OpenType font"))
    })
    .clone()
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plotting: {e:?}")
}

/// One line of a chart: a label and its (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

/// Draws `series` as lines with markers into a PNG at `path`; `log_x` puts x on a log
/// scale (for the transfer ratio r).
///
/// ```no_run
/// use chariot_studies::plot::{line_chart, Series};
/// let s = Series { label: "chariot".into(), points: vec![(0.1, 1.0), (1.0, 1.9), (10.0, 1.95)] };
/// line_chart("speedup.png", "speedup over serial", "r", "speedup", true, &[s]).unwrap();
/// ```
///
/// # Errors
/// No points, a file that cannot be written, or a `CHARIOT_FONT` that names no usable
/// font.
pub fn line_chart(
    path: impl AsRef<Path>,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[Series],
) -> Result<(), String> {
    font()?;
    let extent = extent(title, log_x, series)?;
    let root = BitMapBackend::new(path.as_ref(), LINE_CHART_PX).into_drawing_area();
    draw_line_chart(&root, title, x_label, y_label, log_x, series, extent)?;
    root.present().map_err(err)
}

/// A line chart's size in pixels.
const LINE_CHART_PX: (u32, u32) = (960, 600);

/// A line chart's x and y ranges: ((x0, x1), (y0, y1)).
type Extent = ((f64, f64), (f64, f64));

/// The x and y ranges of a line chart: those of the finite points, padded.
fn extent(title: &str, log_x: bool, series: &[Series]) -> Result<Extent, String> {
    let all: Vec<(f64, f64)> =
        series.iter().flat_map(|s| s.points.iter().copied()).filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
    if all.is_empty() {
        return Err(format!("plotting {title}: no finite points"));
    }
    let (mut x0, mut x1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if log_x {
        x0 /= 1.5;
        x1 *= 1.5;
    } else {
        let pad = ((x1 - x0) * 0.05).max(1e-9);
        x0 -= pad;
        x1 += pad;
    }
    let pad = ((y1 - y0) * 0.08).max(1e-3);
    y0 -= pad;
    y1 += pad;
    Ok(((x0, x1), (y0, y1)))
}

/// Draws a line chart on `root`, any plotters backend (a PNG file, or a buffer in the
/// tests); the font must be registered.
fn draw_line_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[Series],
    ((x0, x1), (y0, y1)): Extent,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK, RGBColor(255, 140, 0), RGBColor(128, 0, 128)];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart.configure_mesh().x_desc(x_label).y_desc(y_label).label_style((FAMILY, 15)).draw().map_err(err)?;
            for (i, s) in series.iter().enumerate() {
                let c = colors[i % colors.len()];
                let pts: Vec<(f64, f64)> =
                    s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(legend_corner(series, log_x, (x0, x1), (y0, y1)))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FAMILY, 14))
                .draw()
                .map_err(err)?;
        }};
    }
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, (FAMILY, 22)).margin(15).x_label_area_size(45).y_label_area_size(65);
    if log_x {
        draw!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(err)?);
    } else {
        draw!(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?);
    }
    Ok(())
}

/// The corner of the plot where the legend covers the least of the lines: each
/// segment is sampled and the samples inside a legend-sized box in each corner counted.
fn legend_corner(series: &[Series], log_x: bool, (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> SeriesLabelPosition {
    let fx = |x: f64| if log_x { (x.ln() - x0.ln()) / (x1.ln() - x0.ln()) } else { (x - x0) / (x1 - x0) };
    let fy = |y: f64| (y - y0) / (y1 - y0);
    // The legend's share of the plot: about a third wide, a line per series high.
    let (w, h) = (0.36, (0.06 * series.len() as f64 + 0.04).min(0.9));
    let corners = [
        (SeriesLabelPosition::UpperRight, (1.0 - w, 1.0), (1.0 - h, 1.0)),
        (SeriesLabelPosition::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
        (SeriesLabelPosition::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        (SeriesLabelPosition::LowerLeft, (0.0, w), (0.0, h)),
    ];
    let mut covered = [0usize; 4];
    for s in series {
        let pts: Vec<(f64, f64)> =
            s.points.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).map(|p| (fx(p.0), fy(p.1))).collect();
        for seg in pts.windows(2) {
            for t in 0..=32 {
                let t = t as f64 / 32.0;
                let (u, v) = (seg[0].0 + t * (seg[1].0 - seg[0].0), seg[0].1 + t * (seg[1].1 - seg[0].1));
                for (c, (_, (ua, ub), (va, vb))) in covered.iter_mut().zip(&corners) {
                    *c += usize::from((*ua..=*ub).contains(&u) && (*va..=*vb).contains(&v));
                }
            }
        }
        for &(u, v) in &pts {
            for (c, (_, (ua, ub), (va, vb))) in covered.iter_mut().zip(&corners) {
                *c += 8 * usize::from((*ua..=*ub).contains(&u) && (*va..=*vb).contains(&v));
            }
        }
    }
    let best = (0..4).min_by_key(|&i| covered[i]).unwrap_or(0);
    corners[best].0.clone()
}

/// One bar of a Gantt chart: GPU, stage, start and end (ns).
type Bar = (usize, Stage, u64, u64);

/// The most GPUs a Gantt chart draws. Each GPU takes a row of 30 px per stage: 256
/// GPUs make a picture 1200 × 30,840 px (about 110 MB while it is drawn).
const GANTT_MAX_GPUS: usize = 256;

/// Draws the timeline of `report` as a Gantt chart: a row per GPU and GPU stage.
///
/// # Errors
/// An empty timeline, more than 256 GPUs, a file that cannot be written, or a
/// `CHARIOT_FONT` that names no usable font.
pub fn gantt(path: impl AsRef<Path>, title: &str, report: &Report) -> Result<(), String> {
    let bars: Vec<Bar> = report.records.iter().map(|r| (r.gpu as usize, r.stage, r.start_ns, r.end_ns)).collect();
    gantt_bars(path.as_ref(), title, &bars)
}

/// Draws a Gantt chart from a Chrome trace written by [`Report::chrome_trace`].
///
/// ```
/// // An event that ends before it starts is not one of chariot's.
/// let trace = r#"{"traceEvents":[{"ph":"X","pid":0,"tid":1,"ts":10,"dur":-5}]}"#;
/// let e = chariot_studies::plot::gantt_from_trace("never-written.png", "t", trace).unwrap_err();
/// assert!(e.contains("event 0") && e.contains("dur -5"), "{e}");
/// ```
///
/// # Errors
/// Trace JSON that is not one of ours (among them a stage event whose `ts` or `dur` is
/// negative, or whose `pid`, the GPU, is 256 or more: the picture would be too large),
/// a file that cannot be written, or a `CHARIOT_FONT` that names no usable font.
pub fn gantt_from_trace(path: impl AsRef<Path>, title: &str, trace_json: &str) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_str(trace_json).map_err(|e| format!("trace: {e}"))?;
    let events = v.get("traceEvents").and_then(|e| e.as_array()).ok_or("trace: no traceEvents array")?;
    let mut bars = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let (Some("X"), Some(pid), Some(tid), Some(ts), Some(dur)) = (
            e.get("ph").and_then(|x| x.as_str()),
            e.get("pid").and_then(|x| x.as_u64()),
            e.get("tid").and_then(|x| x.as_u64()),
            e.get("ts").and_then(|x| x.as_f64()),
            e.get("dur").and_then(|x| x.as_f64()),
        ) else {
            continue;
        };
        let Some(&stage) = usize::try_from(tid).ok().and_then(|t| Stage::ALL.get(t)) else { continue };
        if !(ts.is_finite() && ts >= 0.0) {
            return Err(format!("trace: event {i} has ts {ts}; a start time must be at least 0 µs"));
        }
        if !(dur.is_finite() && dur >= 0.0) {
            return Err(format!("trace: event {i} has dur {dur}; a duration must be at least 0 µs"));
        }
        let gpu = usize::try_from(pid).ok().filter(|&g| g < GANTT_MAX_GPUS).ok_or_else(|| {
            format!("trace: event {i} has pid {pid}; a Gantt chart draws GPUs (pids) 0..{GANTT_MAX_GPUS}")
        })?;
        // Both saturate alike (`as`), so the end stays at or after the start.
        bars.push((gpu, stage, (ts * 1e3) as u64, ((ts + dur) * 1e3) as u64));
    }
    gantt_bars(path.as_ref(), title, &bars)
}

fn gantt_bars(path: &Path, title: &str, bars: &[Bar]) -> Result<(), String> {
    font()?;
    if bars.is_empty() {
        return Err(format!("plotting {title}: empty timeline"));
    }
    let t0 = bars.iter().map(|b| b.2).min().unwrap_or(0);
    let t1 = bars.iter().map(|b| b.3).max().unwrap_or(1);
    let gpus = bars.iter().map(|b| b.0).max().unwrap_or(0).saturating_add(1);
    if gpus > GANTT_MAX_GPUS {
        return Err(format!("plotting {title}: {gpus} GPUs; a Gantt chart draws at most {GANTT_MAX_GPUS}"));
    }
    let row = |gpu: usize, stage: Stage| (gpu * Stage::K + stage.index()) as f64;
    let rows = (gpus * Stage::K) as f64;
    let root = BitMapBackend::new(path, (1200, 120 + 60 * gpus as u32 * Stage::K as u32 / 2)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let span_ms = t1.saturating_sub(t0) as f64 / 1e6;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(130)
        .build_cartesian_2d(0f64..span_ms, (rows - 0.5)..-0.5f64)
        .map_err(err)?;
    // Rows sit on integer positions; only those ticks get a label.
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_labels(4 * gpus * Stage::K)
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            let i = i as usize;
            format!("GPU {} {}", i / Stage::K, Stage::ALL[i % Stage::K])
        })
        .label_style((FAMILY, 14))
        .disable_y_mesh()
        .draw()
        .map_err(err)?;
    let color = |s: Stage| match s {
        Stage::Cpu => RGBColor(120, 120, 120),
        Stage::Download => RGBColor(31, 119, 180),
        Stage::Kernel => RGBColor(44, 160, 44),
        Stage::Readback => RGBColor(214, 39, 40),
    };
    chart
        .draw_series(bars.iter().map(|&(g, s, a, b)| {
            let y = row(g, s);
            let (x0, x1) = (a.saturating_sub(t0) as f64 / 1e6, b.saturating_sub(t0) as f64 / 1e6);
            Rectangle::new([(x0, y - 0.35), (x1, y + 0.35)], color(s).filled())
        }))
        .map_err(err)?;
    // Thin white separators show where one command ends and the next begins.
    chart
        .draw_series(bars.iter().map(|&(g, s, a, _)| {
            let y = row(g, s);
            let x = a.saturating_sub(t0) as f64 / 1e6;
            PathElement::new(vec![(x, y - 0.35), (x, y + 0.35)], WHITE.stroke_width(1))
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

#[cfg(test)]
mod test {
    use super::*;

    /// A line rising from the lower left to the upper right leaves the other corners
    /// free; one falling across the top leaves the bottom free.
    #[test]
    fn the_legend_goes_where_no_line_runs() {
        let rising = Series { label: "a".into(), points: vec![(0.1, 0.0), (1.0, 5.0), (10.0, 10.0)] };
        let p = legend_corner(&[rising], true, (0.1, 10.0), (0.0, 10.0));
        assert!(matches!(p, SeriesLabelPosition::UpperLeft | SeriesLabelPosition::LowerRight), "{p:?}");
        let top = Series { label: "b".into(), points: vec![(0.0, 10.0), (5.0, 9.0), (10.0, 10.0)] };
        let p = legend_corner(&[top], false, (0.0, 10.0), (0.0, 10.0));
        assert!(matches!(p, SeriesLabelPosition::LowerRight | SeriesLabelPosition::LowerLeft), "{p:?}");
    }

    /// Without `CHARIOT_FONT` (or with it empty) the font is the built-in one, and it
    /// parses; a `CHARIOT_FONT` that cannot be read is an error naming it.
    #[test]
    fn the_built_in_font_is_used_unless_chariot_font_names_another() {
        for var in [None, Some("".into())] {
            let (bytes, source) = font_bytes(var).unwrap();
            assert_eq!(bytes.as_ptr(), EMBEDDED_FONT.as_ptr());
            assert!(source.contains("built-in"), "{source}");
        }
        assert!(EMBEDDED_FONT.len() > 100_000, "{} bytes", EMBEDDED_FONT.len());
        assert!(plotters::style::register_font("chariot-unit-embedded", FontStyle::Normal, EMBEDDED_FONT).is_ok());
        let e = font_bytes(Some("/nonexistent/chariot-font.ttf".into())).unwrap_err();
        assert!(e.contains("CHARIOT_FONT=/nonexistent/chariot-font.ttf"), "{e}");
    }

    /// The caption band of a line chart holds only the title: drawn with a title it
    /// has anti-aliased text in it (dark pixels, and greys), drawn without one it is
    /// white. Nothing here reads a font file, so it passes with no fonts installed.
    #[test]
    fn a_chart_draws_its_text_with_the_built_in_font() {
        font().unwrap();
        let (w, h) = LINE_CHART_PX;
        let s = Series { label: "chariot".into(), points: vec![(0.1, 1.0), (1.0, 1.9), (10.0, 1.95)] };
        let draw = |title: &str| {
            let mut buf = vec![0u8; (w * h * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
                let extent = extent(title, true, std::slice::from_ref(&s)).unwrap();
                draw_line_chart(&root, title, "r", "speedup", true, std::slice::from_ref(&s), extent).unwrap();
                root.present().unwrap();
            }
            // The caption band: the margin and the 22 px title above the plot.
            let band: Vec<[u8; 3]> = buf[..(w * 40 * 3) as usize].chunks(3).map(|p| [p[0], p[1], p[2]]).collect();
            let dark = band.iter().filter(|p| p.iter().all(|&c| c < 128)).count();
            let mut colours = band.clone();
            colours.sort_unstable();
            colours.dedup();
            (dark, colours.len())
        };
        let (dark, colours) = draw("speedup over serial");
        assert!(dark > 100 && colours > 4, "title band: {dark} dark pixels, {colours} colours");
        assert_eq!(draw(""), (0, 1), "the band holds nothing but the title");
    }

    /// Both kinds of chart are written as PNG files.
    #[test]
    fn charts_are_written_as_png_files() {
        let dir = std::env::temp_dir();
        let line = dir.join(format!("chariot-plot-unit-{}-line.png", std::process::id()));
        let s = Series { label: "chariot".into(), points: vec![(0.1, 1.0), (1.0, 1.9), (10.0, 1.95)] };
        line_chart(&line, "speedup over serial", "r", "speedup", true, &[s]).unwrap();
        let gantt = dir.join(format!("chariot-plot-unit-{}-gantt.png", std::process::id()));
        // With a dependency arrow (flow events, as chariot's traces have): not drawn.
        let trace = r##"{"traceEvents":[{"ph":"X","pid":0,"tid":1,"ts":0,"dur":40},
            {"ph":"X","pid":0,"tid":2,"ts":40,"dur":100},{"ph":"X","pid":0,"tid":3,"ts":140,"dur":40},
            {"ph":"s","id":0,"name":"#1 -> #2","cat":"dependency","pid":0,"tid":1,"ts":140},
            {"ph":"f","bp":"e","id":0,"name":"#1 -> #2","cat":"dependency","pid":0,"tid":2,"ts":180}]}"##;
        gantt_from_trace(&gantt, "timeline", trace).unwrap();
        for path in [line, gantt] {
            let png = std::fs::read(&path).unwrap();
            let _ = std::fs::remove_file(&path);
            assert!(
                png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 5_000,
                "{}: {} bytes",
                path.display(),
                png.len()
            );
        }
    }

    fn event(pid: &str, ts: &str, dur: &str) -> String {
        format!(r#"{{"traceEvents":[{{"ph":"X","pid":{pid},"tid":2,"ts":{ts},"dur":{dur}}}]}}"#)
    }

    #[test]
    fn hostile_events_are_errors_naming_the_value() {
        let path = std::env::temp_dir().join("chariot-plot-unit-never-written.png");
        for (trace, needle) in [
            (event("0", "10", "-5"), "dur -5"),
            (event("0", "-1", "5"), "ts -1"),
            (event("67108864", "0", "1"), "pid 67108864"),
            (event("256", "0", "1"), "pid 256"),
            (event("18446744073709551615", "0", "1"), "pid 18446744073709551615"),
        ] {
            let e = gantt_from_trace(&path, "t", &trace).unwrap_err();
            assert!(e.contains("event 0") && e.contains(needle), "{trace}: {e}");
        }
        assert!(!path.exists());
        // Events of other tracks (streams) are not drawn, so not checked.
        let stream = r#"{"traceEvents":[{"ph":"X","pid":1000,"tid":100,"ts":-3,"dur":-1}]}"#;
        let e = gantt_from_trace(&path, "t", stream).unwrap_err();
        assert!(!e.contains("event 0"), "{e}");
    }
}
