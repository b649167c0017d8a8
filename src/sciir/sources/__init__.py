"""Where ingest's articles come from: the embedded sample, a folder of JATS articles or PMC OA packages,
or a Europe PMC download. Every source ends as a folder of ``<article>/*.xml`` (or ``*.nxml``) plus
image files, which the ingest pipeline reads the same way whatever the source
(``sciir.sources.prepare.prepare_source_folder``)."""
