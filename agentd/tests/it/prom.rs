//! Reading a Prometheus scrape in tests: fetched over HTTP and parsed by
//! prometheus-parse, a real parser of the text format.

/// One scrape of `url`, parsed by prometheus-parse.
pub async fn scrape(url: &str) -> prometheus_parse::Scrape {
    let body = reqwest::get(url).await.unwrap().text().await.unwrap();
    counter_typed(&body);
    let lines = body.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("the scrape parses as Prometheus text")
}

/// The value of counter or gauge `name` with `labels` (0 when absent).
/// OpenMetrics (prometheus-client's encoding) types a counter by its name
/// without `_total`; prometheus-parse matches types by the full sample name,
/// so it reads `_total` samples as untyped: their `# TYPE` is checked apart
/// ([`counter_typed`]).
pub fn value(s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|x| x.metric == name)
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            other => panic!("{name} is not a counter or gauge: {other:?}"),
        })
        .sum()
}

/// `# TYPE` of every `_total` sample of `body` says counter (OpenMetrics).
fn counter_typed(body: &str) {
    let counters: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap();
        if let Some(base) = name.strip_suffix("_total") {
            // OpenMetrics names the counter without `_total`, the classic
            // text format (CometBFT's) with it.
            assert!(
                counters.contains(&base) || counters.contains(&name),
                "{name} has no counter TYPE"
            );
        }
    }
}

/// The observation count of histogram `name`, summed over its label sets.
pub fn histogram_count(s: &prometheus_parse::Scrape, name: &str) -> u64 {
    let counts: Vec<u64> = s
        .samples
        .iter()
        .filter(|x| x.metric == name)
        .map(|x| match &x.value {
            prometheus_parse::Value::Histogram(buckets) => {
                buckets.iter().map(|b| b.count).fold(0.0, f64::max) as u64
            }
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .collect();
    assert!(!counts.is_empty(), "no histogram {name}");
    counts.iter().sum()
}
