"""The phases of the torch backend's compile path, in the order ``pipeline.compile_graph``
runs them: prepare, analyze, partition, convert, build, wrap. Each is one module with one
entry function of the same name, taking and returning the plain data of the phase before."""
