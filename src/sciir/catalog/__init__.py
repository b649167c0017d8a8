"""Every Kedro dataset class of the project: backends, image files and folders, optional inputs, the
release and report folders, metrics. Catalog entries name them as ``type: sciir.catalog.<module>.<Class>``."""
