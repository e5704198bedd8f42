"""Models and runtimes: the interfaces the stages see their models through (``protocols``)."""
