"""Uploads in the UI's words, in a real browser: an ARFF without its XML asks for the number
of label columns and loads once it has it; a CSV with one 0/1 column gets it proposed as
the label; replacing the main file clears its companion files; no message says "xml=";
an upload keeps its file name."""
import pytest

from e2e_util import set_number, sidebar, upload_file, wait_for_app

pytestmark = pytest.mark.e2e

ARFF = ("@relation tiny\n@attribute f0 numeric\n@attribute f1 numeric\n@attribute f2 numeric\n"
        "@attribute a {0,1}\n@attribute b {0,1}\n@data\n"
        + "".join(f"{i % 3},{(i * 7) % 5},{i % 2},{i % 2},{(i + 1) % 2}\n" for i in range(12)))
XML = ('<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">'
       '<label name="a"/><label name="b"/></labels>')


def _kind(page, title):
    sb = sidebar(page)
    sb.get_by_text("Upload a file", exact=True).click()
    wait_for_app(page)
    sb.locator('[data-testid="stRadio"]').filter(has_text="Kind of data").get_by_text(
        title, exact=True).click()
    wait_for_app(page)


def _in_use(page, text):
    page.wait_for_function(
        "t => document.querySelector('[data-testid=\"stSidebar\"]').innerText"
        ".includes('In use: ' + t)", arg=text, timeout=90_000)


def test_arff_without_xml_asks_for_the_label_columns(app_server, page, tmp_path):
    page.goto(app_server)
    wait_for_app(page)
    arff = tmp_path / "corel_train.arff"
    arff.write_text(ARFF)
    _kind(page, "Multi-label")
    upload_file(page, arff, within=sidebar(page))
    sb = sidebar(page)
    sb.get_by_text("Number of label columns at the end", exact=True).wait_for()
    text = sb.inner_text()
    assert "does not say which attributes are labels" in text
    assert "xml=" not in text and "n_labels" not in text
    set_number(sb, "Number of label columns at the end", 2, page)
    _in_use(page, "corel_train.arff")               # its file name, not "corel_train"
    assert "12 points × 3 features, 2 labels" in sb.inner_text()


def test_replacing_the_main_file_clears_its_companions(app_server, page, tmp_path):
    page.goto(app_server)
    wait_for_app(page)
    first, second, xml = (tmp_path / "scene.arff", tmp_path / "other.arff",
                          tmp_path / "scene.xml")
    first.write_text(ARFF)
    second.write_text(ARFF.replace("@relation tiny", "@relation other"))
    xml.write_text(XML)
    _kind(page, "Multi-label")
    upload_file(page, first, within=sidebar(page))
    sb = sidebar(page)
    sb.get_by_text("Optional companion files").click()
    upload_file(page, xml, label="MULAN XML label header", within=sb)
    _in_use(page, "scene.arff")
    comp = sb.locator('[data-testid="stFileUploader"]').filter(has_text="MULAN XML label header")
    assert comp.locator('[data-testid="stFileChip"]').count() == 1
    upload_file(page, second, within=sb)            # a new main file ...
    sb.get_by_text("Number of label columns at the end", exact=True).wait_for()
    comp = sb.locator('[data-testid="stFileUploader"]').filter(has_text="MULAN XML label header")
    assert comp.locator('[data-testid="stFileChip"]').count() == 0    # ... no stale XML
    assert "does not say which attributes are labels" in sb.inner_text()


def test_csv_with_one_binary_column_proposes_it_as_the_label(app_server, page, tmp_path):
    page.goto(app_server)
    wait_for_app(page)
    csv = tmp_path / "clicks.csv"
    csv.write_text("city,os,clicked\n" + "".join(
        f"{'abc'[i % 3]},{'xy'[i % 2]},{int(i % 3 == 0)}\n" for i in range(30)))
    _kind(page, "Table")
    upload_file(page, csv, within=sidebar(page))
    sb = sidebar(page)
    _in_use(page, "clicks.csv")
    assert "Proposed clicked as the label" in sb.inner_text()
    label = sb.locator('[data-testid="stTextInput"]').filter(
        has_text="Label column").locator("input")
    assert label.input_value() == "clicked"
    assert "30 rows × 2 columns" in sb.inner_text()
