//! Choosing the best clusters without a spread policy (upstream's `selectClusters`).

/// Positions of the best `n` clusters by `totals`, best first: total descending, then
/// position ascending — positions follow cluster names, so this is upstream's "score, then
/// name" order. Only the first `n` are fully sorted.
pub(crate) fn top(totals: &[i64], n: usize) -> Vec<usize> {
    let cmp = |a: &usize, b: &usize| totals[*b].cmp(&totals[*a]).then(a.cmp(b));
    let mut order: Vec<usize> = (0..totals.len()).collect();
    if n == 0 {
        return Vec::new();
    }
    if n < order.len() {
        order.select_nth_unstable_by(n - 1, cmp);
        order.truncate(n);
    }
    order.sort_unstable_by(cmp);
    order
}

#[cfg(test)]
mod tests {
    use super::top;

    #[test]
    fn top_n_orders_by_total_then_position() {
        let totals = [5, 9, 5, 1, 9];
        assert_eq!(top(&totals, 0), Vec::<usize>::new());
        assert_eq!(top(&totals, 2), vec![1, 4]);
        assert_eq!(top(&totals, 3), vec![1, 4, 0]);
        assert_eq!(top(&totals, 10), vec![1, 4, 0, 2, 3]);
    }
}
