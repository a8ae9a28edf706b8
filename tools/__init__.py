"""The maintainers' tools that keep the lessons' copies and README's tables true (CONTRIBUTING.md): check_copies
(every `# Copied from common.<module>.<Name>` block against its original in common/), diff_matrix (how far apart the
lessons are) and details_map (README's implementation-details map)."""
