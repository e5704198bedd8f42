"""Models and runtimes: the interfaces stages see their models through (``protocols``), the weights
manifest (``weights``), ONNX Runtime sessions (``onnx_session``), missing tools or weights
(``dependencies``), and the usage-reporting opt-outs of every runtime (``offline_env``)."""
