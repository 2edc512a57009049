//! Holm's step-down correction: a ladder of m steps makes m comparisons, and
//! without a correction one of nine unchanged steps looks changed a third of
//! the time. Sort the p-values ascending; step (i) is declared changed while
//! p(i) ≤ α / (m − i + 1); the first that fails stops the walk.

/// For each p-value (`None`: no test), whether Holm's procedure at level
/// `alpha` rejects "no change"; in the input's order.
pub fn holm(p_values: &[Option<f64>], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|i| p_values[*i].is_some())
        .collect();
    order.sort_by(|a, b| {
        let (pa, pb) = (p_values[*a].unwrap_or(1.0), p_values[*b].unwrap_or(1.0));
        pa.total_cmp(&pb)
    });
    let m = order.len();
    let mut rejected = vec![false; p_values.len()];
    for (rank, &i) in order.iter().enumerate() {
        let p = p_values[i].unwrap_or(1.0);
        if p > alpha / (m - rank) as f64 {
            break;
        }
        rejected[i] = true;
    }
    rejected
}

#[cfg(test)]
mod tests {
    use super::holm;

    #[test]
    fn the_walk_stops_at_the_first_failure() {
        // m = 4: thresholds 0.0125, 0.0167, 0.025, 0.05 in p order.
        let p = [Some(0.04), Some(0.001), Some(0.015), Some(0.03)];
        assert_eq!(holm(&p, 0.05), [false, true, true, false]);
        // 0.03 fails its 0.025, so 0.04 is not reached though under 0.05.
        let untested = [None, Some(0.01), Some(0.2)];
        assert_eq!(holm(&untested, 0.05), [false, true, false]);
        assert!(holm(&[], 0.05).is_empty());
    }

    #[test]
    fn holm_is_stricter_than_no_correction() {
        let p = [Some(0.02), Some(0.03), Some(0.04)];
        assert_eq!(holm(&p, 0.05), [false, false, false]);
        assert_eq!(holm(&[Some(0.02)], 0.05), [true]);
    }
}
