//! Properties measured from the IDs themselves, in the order their replies arrived.

/// Share of IDs smaller than one that arrived before them (0: perfectly time-sortable).
pub fn out_of_order(ids: &[u64]) -> f64 {
    if ids.is_empty() {
        return 0.0;
    }
    let mut max = 0;
    let mut late = 0usize;
    for &id in ids {
        if id < max {
            late += 1;
        }
        max = max.max(id);
    }
    late as f64 / ids.len() as f64
}

/// The smallest k such that every ID is within k places of its place in sorted order.
pub fn k_ordering(ids: &[u64]) -> usize {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    order
        .iter()
        .enumerate()
        .map(|(rank, &pos)| rank.abs_diff(pos))
        .max()
        .unwrap_or(0)
}

/// How many IDs repeat an earlier one.
pub fn duplicates<T: Ord + Copy>(ids: &[T]) -> usize {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).filter(|w| w[0] == w[1]).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_disorder() {
        assert_eq!(out_of_order(&[1, 2, 3]), 0.0);
        assert_eq!(out_of_order(&[2, 1, 3, 0]), 0.5);
        assert_eq!(k_ordering(&[1, 2, 3]), 0);
        assert_eq!(k_ordering(&[3, 1, 2]), 2);
        assert_eq!(duplicates(&[1, 2, 2, 3, 3]), 2);
    }
}
