"""What enters and leaves a file: bundles, Arrow export, conformance, importers."""
