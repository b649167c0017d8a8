"""JATS parsing: metadata, the three licence markups, methods text, figures, malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sciir.jats import MalformedArticleError, parse_article

EXTERNAL_ARTICLES = Path(__file__).resolve().parents[1] / ".." / "shared" / "external" / "articles"

_NAMESPACES = 'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:ali="http://www.niso.org/schemas/ali/1.0/"'


def _write_article(folder: Path, permissions: str = "", body: str = "", extra: str = "") -> Path:
    """A small but complete JATS article with the given permissions, body and trailing elements."""
    xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<article {_NAMESPACES}>
  <front>
    <journal-meta><journal-title-group><journal-title>Journal of Tests</journal-title></journal-title-group></journal-meta>
    <article-meta>
      <article-id pub-id-type="publisher-id">42</article-id>
      <article-id pub-id-type="doi">10.1234/test.42</article-id>
      <title-group><article-title>A <italic>small</italic> article</article-title></title-group>
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
    ],
    ids=["license-href", "ali-license-ref", "plos-ext-link"],
)
def test_licence_url_is_found_in_each_markup(tmp_path: Path, licence_markup: str) -> None:
    article = parse_article(_write_article(tmp_path, permissions=licence_markup))
    assert article.licence is not None
    assert article.licence.url == "http://creativecommons.org/licenses/by/4.0/"


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


def test_malformed_xml_names_the_file_and_the_parser_message(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_text("<article><front><article-meta></front></article>", encoding="utf-8")
    with pytest.raises(MalformedArticleError) as raised:
        parse_article(path)
    assert str(path) in str(raised.value)
    assert "mismatch" in str(raised.value)


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
    assert plos.licence is not None and plos.licence.url == "http://creativecommons.org/licenses/by/4.0/"
    assert plos.journal == "PLoS ONE"
    ijm = parse_article(external_articles / "ijm-00202" / "main.jats.xml")
    assert ijm.journal == "International Journal of Microsimulation"
    assert "Encuesta Continua de Hogares" in ijm.methods_text
