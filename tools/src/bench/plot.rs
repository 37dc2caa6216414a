//! The two plots of a `pcoll-bench` run, drawn from its rows (so a run's CSV can be plotted
//! again without measuring: `pcoll-bench --replot FILE.csv`): latency against size and the
//! ratio to native, one panel per (collective, p).

use super::report::Row;
use super::svg;

/// Rows grouped by (collective, p), in first-seen order.
fn groups(rows: &[Row]) -> Vec<((&str, usize), Vec<&Row>)> {
    let mut out: Vec<((&str, usize), Vec<&Row>)> = Vec::new();
    for r in rows {
        let key = (r.collective.as_str(), r.p);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => out.push((key, vec![r])),
        }
    }
    out
}

/// Variant labels of a group in measured order (native first).
fn labels(g: &[&Row]) -> Vec<String> {
    let mut l: Vec<String> = Vec::new();
    for r in g {
        if !l.contains(&r.variant) {
            l.push(r.variant.clone());
        }
    }
    l
}

/// One series per variant of a group: (bytes, `y` of the row).
fn series(g: &[&Row], skip_native: bool, y: fn(&Row) -> f64) -> Vec<svg::Series> {
    labels(g)
        .into_iter()
        .filter(|l| !(skip_native && l == "native"))
        .map(|l| svg::Series {
            emphasis: l == "native",
            points: g
                .iter()
                .filter(|r| r.variant == l)
                .map(|r| (r.bytes as f64, y(r)))
                .collect(),
            label: l,
        })
        .collect()
}

/// Latency vs size per (collective, p), one line per variant, native thick black.
pub fn latency_plot(rows: &[Row]) -> String {
    let panels: Vec<svg::Panel> = groups(rows)
        .into_iter()
        .map(|((coll, p), g)| svg::Panel {
            title: format!(
                "{coll}, p = {p} ({}, {} {})",
                g[0].mpi, g[0].datatype, g[0].op
            ),
            ylabel: "median latency (us)".into(),
            series: series(&g, false, |r| r.median_us),
            hline: None,
        })
        .collect();
    svg::render(&panels, 2)
}

/// Ratio (median / native median) vs size; native is the dashed line at 1.
pub fn ratio_plot(rows: &[Row]) -> String {
    let panels: Vec<svg::Panel> = groups(rows)
        .into_iter()
        .map(|((coll, p), g)| svg::Panel {
            title: format!("{coll}, p = {p} ({}): time / native", g[0].mpi),
            ylabel: "median / native median".into(),
            series: series(&g, true, |r| r.ratio),
            hline: Some(1.0),
        })
        .collect();
    svg::render(&panels, 2)
}

/// Rows read back from a CSV written by `pcoll-bench --csv` (the columns the plots use; the
/// others as written where they parse).
pub fn rows_from_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| {
        head.iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("CSV has no column '{name}'"))
    };
    let cols = [
        "mpi",
        "collective",
        "p",
        "bytes",
        "datatype",
        "op",
        "variant",
        "median_us",
        "ratio",
    ]
    .map(col);
    let cols: Vec<usize> = cols.into_iter().collect::<Result<_, _>>()?;
    lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            row(&l.split(',').collect::<Vec<_>>(), &cols)
                .map_err(|e| format!("line {}: {e}", i + 2))
        })
        .collect()
}

fn row(f: &[&str], c: &[usize]) -> Result<Row, String> {
    let get = |k: usize| f.get(c[k]).copied().ok_or("short line");
    let num = |k: usize| get(k)?.parse::<f64>().map_err(|e| format!("{e}"));
    let int = |k: usize| get(k)?.parse::<usize>().map_err(|e| format!("{e}"));
    let median = num(7)?;
    Ok(Row {
        mpi: get(0)?.into(),
        collective: get(1)?.into(),
        p: int(2)?,
        bytes: int(3)?,
        count: 0,
        datatype: get(4)?.parse()?,
        op: get(5)?.parse()?,
        variant: get(6)?.into(),
        algorithm: String::new(),
        iters: 0,
        samples: 0,
        min_us: median,
        median_us: median,
        p90_us: median,
        mean_us: median,
        ratio: num(8)?,
        predicted_us: None,
        errors: 0,
        mismatches: None,
        buffers: String::new(),
        floor_us: None,
        x_floor: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "mpi,collective,p,bytes,count,datatype,op,variant,algorithm,iters,samples,min_us,median_us,p90_us,mean_us,ratio,predicted_us,errors,mismatches
openmpi,reduce,4,8,1,double,sum,native,native,40,80,52.388,75.437,78.928,68.859,1.0000,,0,0
openmpi,reduce,4,8,1,double,sum,ring,ring,40,80,49.764,71.722,78.237,65.989,0.9507,,0,0
openmpi,reduce,4,1024,128,double,sum,native,native,40,80,52.388,80.0,78.928,68.859,1.0000,,0,0
openmpi,reduce,4,1024,128,double,sum,ring,ring,40,80,49.764,60.0,78.237,65.989,0.75,,0,0
openmpi,allreduce,4,8,1,double,sum,native,native,40,80,52.388,75.437,78.928,68.859,1.0000,,0,0
";

    #[test]
    fn csv_rows_group_into_panels_and_series() {
        let rows = rows_from_csv(CSV).unwrap();
        assert_eq!(rows.len(), 5);
        let g = groups(&rows);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].0, ("reduce", 4));
        let s = series(&g[0].1, true, |r| r.ratio);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].label, "ring");
        assert_eq!(s[0].points, vec![(8.0, 0.9507), (1024.0, 0.75)]);
        let s = series(&g[0].1, false, |r| r.median_us);
        assert!(s[0].emphasis && s[0].label == "native");
        assert_eq!(s[0].points, vec![(8.0, 75.437), (1024.0, 80.0)]);
    }

    #[test]
    fn csv_with_the_floor_columns_reads_the_same() {
        // The columns added at the end (buffers, floor_us, x_floor) change nothing read.
        let mut wide = String::new();
        for (i, l) in CSV.lines().enumerate() {
            wide += l;
            wide += if i == 0 {
                ",buffers,floor_us,x_floor\n"
            } else {
                ",cold,9.288,2.240\n"
            };
        }
        let (a, b) = (rows_from_csv(CSV).unwrap(), rows_from_csv(&wide).unwrap());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.bytes, x.median_us, x.ratio),
                (y.bytes, y.median_us, y.ratio)
            );
            assert_eq!((&x.variant, &x.collective), (&y.variant, &y.collective));
        }
    }

    #[test]
    fn bad_csv_is_an_error() {
        assert!(rows_from_csv("").is_err());
        assert!(rows_from_csv("mpi,collective\nx,y\n").is_err());
        let bad = CSV.replace("75.437", "fast");
        assert!(rows_from_csv(&bad).unwrap_err().starts_with("line 2:"));
    }
}
