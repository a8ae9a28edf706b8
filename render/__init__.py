"""The lessons as a static site: a page per lesson (notes beside code, equations typeset), a page per neighbour
pair (the diff, copied blocks folded, prose-only changes told apart), an index. `python -m render` builds it;
`python -m render.diff` prints a neighbour diff in a terminal. Nothing here is imported by the lessons."""
