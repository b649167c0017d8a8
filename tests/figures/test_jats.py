"""JATS parsing: metadata and authors, the licence markups, methods text, figures, and hostile or
malformed files (external entities, remote DTDs, oversize, wrong encoding)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sciir.figures.jats_reader import MalformedArticleError, parse_article

EXTERNAL_ARTICLES = Path(__file__).resolve().parents[2] / ".." / "shared" / "external" / "articles"

_NAMESPACES = 'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:ali="http://www.niso.org/schemas/ali/1.0/"'


def _write_article(
    folder: Path,
    permissions: str = "",
    body: str = "",
    extra: str = "",
    doctype: str = "",
    contribs: str = "",
) -> Path:
    """A small but complete JATS article with the given permissions, body and trailing elements."""
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>{doctype}
<article {_NAMESPACES}>
  <front>
    <journal-meta><journal-title-group><journal-title>Journal of Tests</journal-title></journal-title-group></journal-meta>
    <article-meta>
      <article-id pub-id-type="publisher-id">42</article-id>
      <article-id pub-id-type="doi">10.1234/test.42</article-id>
      <title-group><article-title>A <italic>small</italic> article</article-title></title-group>
      {contribs}
      <permissions>{permissions}</permissions>
    </article-meta>
  </front>
  <body>{body}</body>
  {extra}
</article>"""
    path = folder / "article.xml"
    path.write_text(xml, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "licence_markup",
    [
        '<license xlink:href="http://creativecommons.org/licenses/by/4.0/"><license-p>CC BY</license-p></license>',
        "<license><ali:license_ref>http://creativecommons.org/licenses/by/4.0/</ali:license_ref></license>",
        '<license><license-p>Distributed under the <ext-link xlink:href="http://creativecommons.org/licenses/by/4.0/">'
        "Creative Commons Attribution License</ext-link>.</license-p></license>",
        "<ali:license_ref>http://creativecommons.org/licenses/by/4.0/</ali:license_ref>",
        "<license><license-p>Licensed under CC BY (http://creativecommons.org/licenses/by/4.0/).</license-p></license>",
    ],
    ids=["license-href", "ali-license-ref", "plos-ext-link", "ali-outside-license", "url-in-prose"],
)
def test_licence_url_is_found_in_each_markup(tmp_path: Path, licence_markup: str) -> None:
    article = parse_article(_write_article(tmp_path, permissions=licence_markup))
    assert article.licence is not None
    assert article.licence.urls == ["http://creativecommons.org/licenses/by/4.0/"]


def test_every_licence_url_is_kept_for_the_decision(tmp_path: Path) -> None:
    permissions = (
        '<license xlink:href="http://creativecommons.org/licenses/by/4.0/"><license-p>Open access under '
        "creativecommons.org/licenses/by-nc/4.0.</license-p></license>"
        '<license xml:lang="fr" xlink:href="http://creativecommons.org/licenses/by/4.0/"/>'
    )
    licence = parse_article(_write_article(tmp_path, permissions=permissions)).licence
    assert licence is not None
    assert licence.urls == [
        "http://creativecommons.org/licenses/by/4.0/",
        "creativecommons.org/licenses/by-nc/4.0",
    ]
    assert licence.text == "Open access under creativecommons.org/licenses/by-nc/4.0."


def test_licence_prose_without_a_link_is_kept(tmp_path: Path) -> None:
    permissions = "<license><license-p>Creative Commons Attribution 4.0 International.</license-p></license>"
    licence = parse_article(_write_article(tmp_path, permissions=permissions)).licence
    assert licence is not None and licence.urls == []
    assert licence.text == "Creative Commons Attribution 4.0 International."


def test_authors_in_each_name_markup_without_editors(tmp_path: Path) -> None:
    contribs = """<contrib-group>
      <contrib contrib-type="author"><name><surname>Curie</surname><given-names>Marie</given-names></name></contrib>
      <contrib contrib-type="author"><name name-style="eastern"><surname>Li</surname><given-names>Wei</given-names>
        </name></contrib>
      <contrib contrib-type="author"><name><surname>King</surname><given-names>Martin L</given-names>
        <suffix>Jr</suffix></name></contrib>
      <contrib><string-name>A. N. Other</string-name></contrib>
      <contrib contrib-type="author"><collab>The Consortium<contrib-group><contrib contrib-type="author">
        <name><surname>Member</surname><given-names>Ann</given-names></name></contrib></contrib-group></collab></contrib>
      <contrib contrib-type="editor"><name><surname>Editor</surname><given-names>Ed</given-names></name></contrib>
    </contrib-group>"""
    authors = parse_article(_write_article(tmp_path, contribs=contribs)).authors
    assert authors == ["Marie Curie", "Li Wei", "Martin L King Jr", "A. N. Other", "The Consortium"]


def test_metadata_and_missing_licence(tmp_path: Path) -> None:
    article = parse_article(_write_article(tmp_path, permissions="<copyright-year>2020</copyright-year>"))
    assert article.doi == "10.1234/test.42"
    assert article.title == "A small article"
    assert article.journal == "Journal of Tests"
    assert article.licence is None


def test_methods_text_by_sec_type_and_by_title_without_figure_captions(tmp_path: Path) -> None:
    body = """
      <sec sec-type="intro"><title>Introduction</title><p>Not this.</p></sec>
      <sec sec-type="materials|methods"><title>Procedures</title><p>Cells were grown.</p>
        <fig id="f9"><caption><p>Caption text stays out.</p></caption></fig>
        <sec><title>Imaging</title><p>Images were taken.</p></sec></sec>
      <sec><title>3. Data and methods</title><p>Surveys were pooled.</p></sec>"""
    methods = parse_article(_write_article(tmp_path, body=body)).methods_text
    assert methods == "Cells were grown.\n\nImages were taken.\n\nSurveys were pooled."


def test_figures_groups_supplements_and_response_figures(tmp_path: Path) -> None:
    body = """
      <sec><title>Results</title>
        <fig-group>
          <fig id="fig1"><label>Figure 1.</label><caption><title>Main.</title><p>Details.</p></caption>
            <graphic xlink:href="fig1.jpg"/></fig>
          <fig id="fig1s1" specific-use="child-fig"><label>Figure 1—figure supplement 1.</label>
            <caption><p>Supplement.</p></caption><graphic xlink:href="fig1-figsupp1.jpg"/>
            <attrib>Photo courtesy of a museum.</attrib></fig>
        </fig-group>
        <fig id="fig2"><label>Figure 2.</label><caption><p>No image.</p></caption></fig>
      </sec>"""
    response = """<sub-article article-type="reply"><body>
        <fig id="respfig1"><label>Author response image 1.</label><graphic xlink:href="resp-fig1.jpg"/></fig>
      </body></sub-article>"""
    figures = parse_article(_write_article(tmp_path, body=body, extra=response)).figures
    assert [figure.figure_id for figure in figures] == ["fig1", "fig1s1", "fig2", "respfig1"]
    assert figures[0].caption == "Main. Details."
    assert figures[0].graphic_href == "fig1.jpg"
    assert figures[1].credit == "Photo courtesy of a museum."
    assert figures[2].graphic_href is None
    assert [figure.is_main_figure for figure in figures] == [True, True, True, False]
    assert figures[3].foreign_container == '<sub-article article-type="reply">'
    assert figures[3].caption == ""


def test_figure_takes_its_groups_caption_and_keeps_its_own_licence(tmp_path: Path) -> None:
    body = """<fig-group><caption><p>Shared caption.</p></caption>
        <fig id="a"><graphic xlink:href="a.png"/></fig>
        <fig id="b"><caption><p>Own caption.</p></caption><graphic xlink:href="b.png"/>
          <permissions><copyright-statement>© 2001 Other Press</copyright-statement>
            <license xlink:href="http://creativecommons.org/licenses/by-nc/4.0/"/></permissions></fig>
      </fig-group>"""
    figures = parse_article(_write_article(tmp_path, body=body)).figures
    assert [figure.caption for figure in figures] == ["Shared caption.", "Own caption."]
    assert figures[0].licence is None
    assert figures[1].licence is not None
    assert figures[1].licence.urls == ["http://creativecommons.org/licenses/by-nc/4.0/"]
    assert "© 2001 Other Press" in figures[1].credit


def test_malformed_xml_names_the_file_and_the_parser_message(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_text("<article><front><article-meta></front></article>", encoding="utf-8")
    with pytest.raises(MalformedArticleError) as raised:
        parse_article(path)
    assert str(path) in str(raised.value)
    assert "mismatch" in str(raised.value)


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b"", "Document is empty"),
        (b"<html><body>Not found</body></html>", "root element is <html>, not a JATS <article>"),
        (
            "<article><front>caf\u00e9</front></article>".encode("latin-1"),
            "not in the encoding the file declares",
        ),
    ],
    ids=["empty", "not-jats", "latin-1-undeclared"],
)
def test_unusable_files_name_the_file_and_what_is_wrong(
    tmp_path: Path, content: bytes, complaint: str
) -> None:
    path = tmp_path / "article.xml"
    path.write_bytes(content)
    with pytest.raises(MalformedArticleError, match=str(path)) as raised:
        parse_article(path)
    assert complaint in str(raised.value)


def test_declared_non_utf8_encoding_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "article.xml"
    xml = '<?xml version="1.0" encoding="ISO-8859-1"?><article><front><article-meta><title-group>'
    xml += (
        "<article-title>Caf\u00e9 m\u00fcsli</article-title></title-group></article-meta></front></article>"
    )
    path.write_bytes(xml.encode("latin-1"))
    assert parse_article(path).title == "Caf\u00e9 m\u00fcsli"


def test_files_over_the_size_bound_or_not_regular_are_refused_unparsed(tmp_path: Path) -> None:
    path = _write_article(tmp_path)
    size = path.stat().st_size
    assert parse_article(path, max_bytes=size).doi == "10.1234/test.42"
    with pytest.raises(MalformedArticleError, match=f"larger than the {size - 1}-byte limit"):
        parse_article(path, max_bytes=size - 1)
    folder = tmp_path / "folder.xml"
    folder.mkdir()
    with pytest.raises(MalformedArticleError, match="not a regular file"):
        parse_article(folder)


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A local file no article may read, and a DTD beside it that would define an entity from it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    (tmp_path / "evil.dtd").write_text('<!ENTITY leak "TOP-SECRET-CONTENT">', encoding="utf-8")
    return secret


@pytest.mark.parametrize(
    "declaration",
    ['<!ENTITY xxe SYSTEM "{file}">', '<!ENTITY % xxe SYSTEM "{dtd}"> %xxe;'],
    ids=["general-entity", "parameter-entity"],
)
def test_external_entity_to_a_local_file_is_refused_and_never_read(
    tmp_path: Path, secret_file: Path, declaration: str
) -> None:
    entity = declaration.format(file=secret_file.as_uri(), dtd=(tmp_path / "evil.dtd").as_uri())
    path = _write_article(
        tmp_path,
        doctype=f"<!DOCTYPE article [{entity}]>",
        body='<fig id="f1"><caption><p>See &xxe;.</p></caption></fig>',
    )
    with pytest.raises(MalformedArticleError) as raised:
        parse_article(path)
    message = str(raised.value)
    assert str(path) in message and "declares external entities (xxe ->" in message
    assert "TOP-SECRET-CONTENT" not in message


def test_external_dtd_on_disk_is_not_loaded(tmp_path: Path, secret_file: Path) -> None:
    dtd = (tmp_path / "evil.dtd").as_uri()
    path = _write_article(
        tmp_path,
        doctype=f'<!DOCTYPE article SYSTEM "{dtd}">',
        body='<fig id="f1"><caption><p>See &leak;.</p></caption></fig>',
    )
    caption = parse_article(path).figures[0].caption
    assert "TOP-SECRET-CONTENT" not in caption
    assert caption == "See &leak;."  # left as an unexpanded reference


@pytest.fixture
def dtd_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a DTD and records every request it gets."""
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'<!ENTITY leak "FETCHED-OVER-THE-NETWORK">')

        def log_message(self, *args: object) -> None:
            """Quiet: the test reads ``requests`` instead."""

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    thread.join()


def test_remote_dtd_is_never_fetched(tmp_path: Path, dtd_server: tuple[str, list[str]]) -> None:
    # libxml2 builds without HTTP support could not fetch anyway; this guards builds that can.
    base_url, requests = dtd_server
    remote_dtd = _write_article(
        tmp_path,
        doctype=f'<!DOCTYPE article PUBLIC "-//NLM//DTD JATS//EN" "{base_url}/jats.dtd">',
        body='<fig id="f1"><caption><p>See &leak;.</p></caption></fig>',
    )
    assert parse_article(remote_dtd).figures[0].caption == "See &leak;."
    (tmp_path / "second").mkdir()
    remote_entity = _write_article(
        tmp_path / "second",
        doctype=f'<!DOCTYPE article [<!ENTITY % remote SYSTEM "{base_url}/entities.dtd"> %remote;]>',
    )
    with pytest.raises(MalformedArticleError, match="declares external entities"):
        parse_article(remote_entity)
    assert requests == []


@pytest.fixture
def external_articles() -> Path:
    if not EXTERNAL_ARTICLES.is_dir():
        pytest.skip("shared/external/articles is not present")
    return EXTERNAL_ARTICLES


def test_elife_response_figure_is_not_a_main_figure(external_articles: Path) -> None:
    article = parse_article(external_articles / "elife-43154-v2" / "main.jats.xml")
    assert article.doi == "10.7554/eLife.43154"
    main = [figure.figure_id for figure in article.figures if figure.is_main_figure]
    assert main == ["fig1", "fig2"]
    assert [figure.figure_id for figure in article.figures if not figure.is_main_figure] == ["respfig1"]


def test_elife_figure_supplements_are_figures(external_articles: Path) -> None:
    article = parse_article(external_articles / "elife-30274-v1" / "main.jats.xml")
    assert [figure.graphic_href for figure in article.figures] == [
        "fig1.jpg", "fig2.jpg", "fig2-figsupp1.jpg", "fig2-figsupp2.jpg", "fig3.jpg",
    ]  # fmt: skip
    assert article.methods_text


def test_plos_licence_variant_and_ijm_methods(external_articles: Path) -> None:
    plos = parse_article(external_articles / "plosone-0093988" / "main.jats.xml")
    assert plos.licence is not None and plos.licence.urls == ["http://creativecommons.org/licenses/by/4.0/"]
    assert plos.journal == "PLoS ONE"
    ijm = parse_article(external_articles / "ijm-00202" / "main.jats.xml")
    assert ijm.journal == "International Journal of Microsimulation"
    assert "Encuesta Continua de Hogares" in ijm.methods_text
