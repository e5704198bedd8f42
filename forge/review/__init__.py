"""Human review (docs/review.md): the Label Studio tasks of a benchmark's items, verdicts and their
consequences, review units, agreement, and the gate that holds unreviewed items back from the export."""
