//! Plain-text tables as kubectl prints them: columns padded to their widest cell, three
//! spaces apart, no trailing spaces.

/// Renders `header` and `rows`.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.len());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            s.push_str(&format!("{c:<w$}   "));
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pads_columns_to_the_widest_cell() {
        let rows = vec![
            vec!["a".to_owned(), "longer".to_owned()],
            vec!["bbb".to_owned(), String::new()],
        ];
        assert_eq!(
            super::render(&["X", "Y"], &rows),
            "X     Y\na     longer\nbbb\n"
        );
    }
}
