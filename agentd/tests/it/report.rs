//! `feth load --metrics` scraped during a real run and parsed as Prometheus
//! text, its last scrape agreeing with the run's JSON; `feth report` on that
//! JSON opened in Debian's headless Chromium (installed by `scripts/setup.sh
//! --test`): no console errors, a screenshot, and every chart's drawn points
//! read back and checked against the JSON. Bad run files get errors naming
//! the file and the problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use feth::load::metrics::LoadMetrics;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadReport, LoadSettings};
use feth_metrics_http as metrics_http;

use crate::common::{funded, TestNet};
use crate::prom::{histogram_count, scrape, value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_is_scraped_live_and_its_report_holds_the_run_in_chromium() {
    let net = TestNet::start().await;
    let (keys, dir) = funded(&net, 40, 7).await;
    let metrics = Arc::new(LoadMetrics::new());
    let render: metrics_http::Render = {
        let m = metrics.clone();
        Arc::new(move || m.encode())
    };
    let (addr, server) = metrics_http::serve("127.0.0.1:0".parse().unwrap(), render)
        .await
        .unwrap();
    // A ramp (three steps of 3 s) so the report has steps to mark.
    let schedule = RateSchedule::parse_ramp("20:20:3").unwrap();
    let mut plan = LoadPlan::transfers(schedule, keys.len());
    plan.duration = Some(Duration::from_secs(9));
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.metrics = Some(metrics.clone());
    let running = load::start(settings, keys).await.unwrap();

    // While it runs: the scrape parses, with the conventional names.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let live = loop {
        let s = scrape(&format!("http://{addr}/metrics")).await;
        if value(&s, "feth_load_included_total", &[]) > 0.0 {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing included in 20 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(value(&live, "feth_load_offered_rate_transactions_per_second", &[]) >= 20.0);
    assert!(
        value(&live, "feth_load_sent_total", &[]) >= value(&live, "feth_load_included_total", &[])
    );
    let r = running.finish().await.unwrap();

    // The last scrape agrees with the run's JSON.
    let last = scrape(&format!("http://{addr}/metrics")).await;
    server.abort();
    let t = &r.totals;
    assert!(t.included > 100, "{t:?}");
    assert_eq!(value(&last, "feth_load_sent_total", &[]), t.signed as f64);
    assert_eq!(
        value(&last, "feth_load_included_total", &[]),
        t.included as f64
    );
    let accepted: u64 = r.series.iter().map(|s| s.accepted).sum();
    assert_eq!(
        value(&last, "feth_load_accepted_total", &[]),
        accepted as f64
    );
    assert_eq!(
        value(&last, "feth_load_rejected_total", &[]),
        t.rejected as f64
    );
    for (reason, n) in &t.rejected_by_reason {
        assert_eq!(
            value(&last, "feth_load_rejected_total", &[("reason", reason)]),
            *n as f64
        );
    }
    assert_eq!(
        value(&last, "feth_load_resends_total", &[]),
        r.resends as f64
    );
    assert_eq!(
        value(&last, "feth_load_backoffs_total", &[]),
        r.backoffs as f64
    );
    assert_eq!(
        histogram_count(&last, "feth_load_inclusion_latency_seconds"),
        t.included
    );
    assert_eq!(
        histogram_count(&last, "feth_load_schedule_lag_seconds"),
        t.signed
    );
    assert_eq!(
        value(&last, "feth_load_offered_rate_transactions_per_second", &[]),
        0.0
    );

    // The report of that run, in Chromium.
    let run = dir.path().join("run.json");
    std::fs::write(&run, serde_json::to_string(&r).unwrap()).unwrap();
    let out = dir.path().join("report");
    let written = feth_report(&[run.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    let page = out.join("report.html");
    assert!(text(&written.stdout).contains(page.to_str().unwrap()));
    let seen = open_in_chromium(&page, dir.path());
    assert!(
        seen.console.is_empty(),
        "console messages: {:?}",
        seen.console
    );
    let figures = figures(&seen.dom);
    check_run_charts(&figures, &r);
    assert!(
        seen.dom.contains("<table class=\"windows\">"),
        "no window table"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!("{:.1}", r.chain.committed_tps)),
        "{summary}"
    );
}

/// What Chromium made of a page.
struct Seen {
    /// The DOM after the page loaded.
    dom: String,
    /// Console messages (errors, logs) of the page and its frames.
    console: Vec<String>,
}

/// Opens `page` in headless Chromium twice: a screenshot (kept in `dir`,
/// checked to be a PNG), then the DOM with the console log.
fn open_in_chromium(page: &Path, dir: &Path) -> Seen {
    let url = format!("file://{}", page.display());
    let run = |extra: &[&str]| -> Output {
        Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1000,3000",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.join("chromium-profile").display()
            ))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs (bash scripts/setup.sh --test installs it)")
    };
    let shot = dir.join("report.png");
    let out = run(&[&format!("--screenshot={}", shot.display())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let png = std::fs::read(&shot).expect("chromium wrote a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    if let Ok(keep) = std::env::var("FETH_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    let out = run(&["--dump-dom"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let console = text(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Seen {
        dom: text(&out.stdout),
        console,
    }
}

/// A chart as drawn: its reading aids and its SVG's shapes.
#[derive(Debug)]
struct Figure {
    x: (f64, f64),
    y: (f64, f64),
    px: (f64, f64, f64, f64),
    series: Vec<(String, String)>,
    /// Polylines: stroke colour and points, in drawing order.
    lines: Vec<(String, Vec<(f64, f64)>)>,
    /// Filled rectangles: x, y, width, height (pixels).
    rects: Vec<(f64, f64, f64, f64)>,
}

impl Figure {
    /// Pixel to data, x (plotters maps the range onto pixels left..right-1).
    fn x_of(&self, px: f64) -> f64 {
        self.x.0 + (px - self.px.0) / (self.px.1 - 1.0 - self.px.0) * (self.x.1 - self.x.0)
    }
    /// Pixel to data, y (the range onto pixels bottom-1..top).
    fn y_of(&self, py: f64) -> f64 {
        self.y.0 + (self.px.3 - 1.0 - py) / (self.px.3 - 1.0 - self.px.2) * (self.y.1 - self.y.0)
    }
    /// One pixel in data units: (x, y).
    fn pixel(&self) -> (f64, f64) {
        (
            (self.x.1 - self.x.0) / (self.px.1 - 1.0 - self.px.0),
            (self.y.1 - self.y.0) / (self.px.3 - 1.0 - self.px.2),
        )
    }
    /// The points of series `name`, in data units.
    fn points(&self, name: &str) -> Vec<(f64, f64)> {
        let colour = &self
            .series
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no series {name} in {:?}", self.series))
            .1;
        let (_, pts) = self
            .lines
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(colour))
            .unwrap_or_else(|| panic!("no line of colour {colour}"));
        pts.iter()
            .map(|&(x, y)| (self.x_of(x), self.y_of(y)))
            .collect()
    }
}

fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[at..at + tag[at..].find('"').unwrap()]
}

fn numbers<const N: usize>(text: &str) -> [f64; N] {
    let v: Vec<f64> = text.split(',').map(|x| x.trim().parse().unwrap()).collect();
    v.try_into().unwrap()
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Every `<figure class="chart">` of the DOM, by id, its SVG parsed as XML.
fn figures(dom: &str) -> BTreeMap<String, Figure> {
    let mut out = BTreeMap::new();
    for chunk in dom.split("<figure ").skip(1) {
        let tag = &chunk[..chunk.find('>').unwrap()];
        let tag = format!(" {tag}");
        let svg = &chunk[chunk.find("<svg").unwrap()..chunk.find("</svg>").unwrap() + 6];
        let doc = roxmltree::Document::parse(svg).expect("the chart's SVG is well-formed");
        let mut lines = Vec::new();
        let mut rects = Vec::new();
        for n in doc.descendants() {
            match n.tag_name().name() {
                "polyline" => {
                    let pts = n
                        .attribute("points")
                        .unwrap()
                        .split_whitespace()
                        .map(|p| {
                            let [x, y] = numbers::<2>(p);
                            (x, y)
                        })
                        .collect();
                    lines.push((n.attribute("stroke").unwrap_or("").to_string(), pts));
                }
                "rect"
                    if n.attribute("fill") != Some("#FFFFFF")
                        && n.attribute("fill") != Some("none") =>
                {
                    let num = |k| n.attribute(k).unwrap().parse::<f64>().unwrap();
                    rects.push((num("x"), num("y"), num("width"), num("height")));
                }
                _ => {}
            }
        }
        let [x0, x1] = numbers::<2>(attr(&tag, "data-x"));
        let [y0, y1] = numbers::<2>(attr(&tag, "data-y"));
        let [l, r, t, b] = numbers::<4>(attr(&tag, "data-px"));
        let series: Vec<(String, String)> =
            serde_json::from_str(&unescape(attr(&tag, "data-series"))).unwrap();
        out.insert(
            attr(&tag, "data-chart").to_string(),
            Figure {
                x: (x0, x1),
                y: (y0, y1),
                px: (l, r, t, b),
                series,
                lines,
                rects,
            },
        );
    }
    out
}

/// `drawn` holds exactly the points `want`, each within 1.5 pixels.
fn assert_points(fig: &Figure, name: &str, want: &[(f64, f64)]) {
    let drawn = fig.points(name);
    assert_eq!(drawn.len(), want.len(), "{name}: {drawn:?} vs {want:?}");
    let (px, py) = fig.pixel();
    for (d, w) in drawn.iter().zip(want) {
        assert!(
            (d.0 - w.0).abs() <= 1.5 * px && (d.1 - w.1).abs() <= 1.5 * py,
            "{name}: drawn {d:?}, the JSON says {w:?} (a pixel: {:?}, figure {:?} {:?} {:?})",
            fig.pixel(),
            fig.x,
            fig.y,
            fig.px
        );
    }
}

/// Every chart of run 0 against the run's JSON.
fn check_run_charts(figs: &BTreeMap<String, Figure>, r: &LoadReport) {
    let fig = |id: &str| {
        figs.get(id)
            .unwrap_or_else(|| panic!("no chart {id}: {:?}", figs.keys()))
    };
    let per_second = |f: &dyn Fn(&load::report::Second) -> f64| -> Vec<(f64, f64)> {
        r.series.iter().map(|s| (s.second as f64, f(s))).collect()
    };
    let tps = fig("run0-tps");
    assert_points(tps, "committed", &per_second(&|s| s.included as f64));
    assert_points(tps, "sent", &per_second(&|s| s.sent as f64));
    let offered: Vec<(f64, f64)> = r
        .series
        .iter()
        .filter_map(|s| s.offered.map(|o| (s.second as f64, o)))
        .collect();
    assert_points(tps, "offered", &offered);
    // Ramp steps at 3 s and 6 s are marked (grey vertical lines).
    let marks: Vec<f64> = tps
        .lines
        .iter()
        .filter(|(c, _)| c == "#999999")
        .map(|(_, p)| tps.x_of(p[0].0).round())
        .collect();
    assert_eq!(marks, vec![3.0, 6.0], "{:?}", tps.lines);

    let latency = fig("run0-latency");
    let with_latency: Vec<_> = r
        .series
        .iter()
        .filter_map(|s| s.latency_ms.clone().map(|l| (s.second as f64, l)))
        .collect();
    assert!(!with_latency.is_empty());
    assert_points(
        latency,
        "p50",
        &with_latency
            .iter()
            .map(|(s, l)| (*s, l.p50))
            .collect::<Vec<_>>(),
    );
    assert_points(
        latency,
        "p99",
        &with_latency
            .iter()
            .map(|(s, l)| (*s, l.p99))
            .collect::<Vec<_>>(),
    );

    // Block times from CometBFT's header times (ns), not web3's whole
    // seconds: the window opens at its last header less its length.
    let last = r
        .blocks
        .iter()
        .rev()
        .find(|b| b.number == r.chain.last_block)
        .unwrap();
    assert!(
        r.blocks.iter().all(|b| b.time_ns.is_some()),
        "{:?}",
        r.blocks
    );
    let mut prev = last.time() - r.chain.seconds;
    let block_times: Vec<(f64, f64)> = r
        .blocks
        .iter()
        .map(|b| {
            let p = (b.number as f64, b.time() - prev);
            prev = b.time();
            p
        })
        .collect();
    assert!(block_times.len() >= 5, "{:?}", r.blocks);
    assert_points(fig("run0-block-time"), "block time", &block_times);

    // The histogram's bars count the JSON's blocks by their transactions.
    let hist = fig("run0-txs-per-block");
    let (_, py) = hist.pixel();
    let mut drawn_total = 0.0;
    for &(x, y, w, h) in &hist.rects {
        let (lo, hi) = (hist.x_of(x), hist.x_of(x + w));
        let height = hist.y_of(y) - hist.y_of(y + h);
        let want = r
            .blocks
            .iter()
            .filter(|b| (b.txs as f64) >= lo - 0.5 && (b.txs as f64) < hi - 0.5)
            .count();
        assert!(
            (height - want as f64).abs() <= 1.5 * py,
            "bin {lo}..{hi}: drawn {height}, the JSON has {want}"
        );
        drawn_total += height;
    }
    assert!(
        (drawn_total - r.blocks.len() as f64).abs() <= 1.5 * py * hist.rects.len() as f64,
        "{drawn_total} vs {}",
        r.blocks.len()
    );
}

fn feth_report(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_feth"))
        .arg("report")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn truncated_old_new_and_foreign_files_get_errors_naming_file_and_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (
            write(d, "cut.json", "{\"version\": 2, \"totals\": {\"signed\": 1"),
            "is truncated",
        ),
        (write(d, "text.json", "committed TPS 12.0\n"), "is not JSON"),
        (
            write(
                d,
                "old.json",
                "{\"version\": 0, \"totals\": {}, \"series\": []}",
            ),
            "unknown older version",
        ),
        (
            write(
                d,
                "new.json",
                "{\"version\": 99, \"totals\": {}, \"series\": []}",
            ),
            "newer than this feth reads",
        ),
        (
            write(
                d,
                "v2.json",
                "{\"version\": 2, \"totals\": {}, \"series\": []}",
            ),
            "does not match this feth's format",
        ),
        (
            write(d, "other.json", "{\"a\": 1}"),
            "is JSON but neither a `feth load --json`",
        ),
        (
            write(d, "sat.json", "{\"steps\": [], \"outcome\": {}}"),
            "feth saturate",
        ),
    ];
    for (path, problem) in &cases {
        let out = feth_report(&[
            path.to_str().unwrap(),
            "--out",
            d.join("out").to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{path:?} was accepted");
        assert!(
            err.contains(path.to_str().unwrap()) && err.contains(problem),
            "{path:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!d.join("out").exists(), "nothing is written for a bad file");
}
