"""Where ingest's articles come from and how they are read: the embedded sample, a folder of JATS articles
or PMC OA packages, or a Europe PMC download. Every source ends as a folder of ``<article>/*.xml`` (or
``*.nxml``) plus image files (``sciir.sources.prepare.prepare_source_folder``), read the same way whatever
the source into the ``articles`` and ``figures`` tables (``sciir.sources.article_tables``)."""
