"""The canonical environment wrappers.

Every script in this library is one self-contained file, so a script never imports from here: it carries a
copy of each wrapper it needs, directly under a marker comment

    # Copied from common.wrappers.Name

(optionally ``with Old->New`` to rename identifiers in the copy). ``python -m common.check_copies`` fails when
a copy has drifted from the original below, and ``python -m common.check_copies --fix`` rewrites the copies.

CartPole needs no wrapper beyond gymnasium's own RecordEpisodeStatistics; the frame-skip, grayscale/resize,
frame-stack and reward wrappers of the Atari and Mario scripts are added here with those scripts.
"""
