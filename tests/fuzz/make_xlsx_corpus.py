#!/usr/bin/env python3
# Writes the seeds of tests/fuzz/corpus/xlsx (run once; the bytes are committed):
#   python3 tests/fuzz/make_xlsx_corpus.py tests/fuzz/corpus/xlsx
# Four small workbooks written by openpyxl, and one package written by hand with what
# openpyxl does not write (shared strings with rich text and phonetic runs, inline
# strings, an error cell, a shared formula, cached results).
import datetime, openpyxl, sys, zipfile
from openpyxl.styles import numbers
out = sys.argv[1]

wb = openpyxl.Workbook(); ws = wb.active; ws.title = "Data"
ws["A1"] = "name"; ws["B1"] = "amount"; ws["C1"] = "paid"
ws["A2"] = "Alice"; ws["B2"] = 100; ws["C2"] = True
ws["A3"] = "Bob"; ws["B3"] = -2.5e3; ws["C3"] = False
ws["B4"] = "=SUM(B2:B3)"
wb.save(out + "/typed.xlsx")

wb = openpyxl.Workbook(); ws = wb.active
ws["A1"] = 0.25; ws["A1"].number_format = "0.00%"
ws["B1"] = datetime.date(2026, 1, 2); ws["B1"].number_format = "yyyy-mm-dd"
ws["C1"].number_format = "0.00"  # styled blank
ws["D5"] = "é € 😀"
ws2 = wb.create_sheet("Second"); ws2["XFD1"] = "last column"; ws2["A1048576"] = 1
wb.save(out + "/formats_two_sheets.xlsx")

wb = openpyxl.Workbook(); ws = wb.active
for r in range(1, 8):
    for c in range(1, 5):
        ws.cell(row=r, column=c, value=(r * c if (r + c) % 3 else "s%d" % r))
ws["E1"] = "=A1*2"; ws["E2"] = "=A2*2"
wb.save(out + "/grid.xlsx")

wb = openpyxl.Workbook()
wb.save(out + "/empty.xlsx")

out = sys.argv[1]
parts = {
"[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>',
"_rels/.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
"xl/workbook.xml": '<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Hand" sheetId="1" r:id="rId1"/></sheets></workbook>',
"xl/_rels/workbook.xml.rels": '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>',
"xl/sharedStrings.xml": '<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="3" uniqueCount="3"><si><t>plain</t></si><si><r><t>rich </t></r><r><rPr><b/></rPr><t xml:space="preserve">text </t></r><rPh sb="0" eb="1"><t>PHON</t></rPh></si><si><t>&lt;&amp;&gt; &#233;</t></si></sst>',
"xl/styles.xml": '<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="1"><numFmt numFmtId="164" formatCode="0.000"/></numFmts><fonts count="1"><font/></fonts><fills count="1"><fill/></fills><borders count="1"><border/></borders><cellStyleXfs count="1"><xf/></cellStyleXfs><cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>',
"xl/worksheets/sheet1.xml": '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c><c r="D1" t="inlineStr"><is><t>inline</t></is></c></row><row r="2"><c r="A2" s="1"><v>1.5</v></c><c r="B2" t="e"><v>#DIV/0!</v></c><c r="C2" t="b"><v>1</v></c><c r="D2" s="2"><v>46023</v></c><c r="E2" s="1"/></row><row r="3"><c r="A3"><f t="shared" ref="A3:A5" si="0">A2*2</f><v>3</v></c><c r="B3" t="str"><f>"x"&amp;B1</f><v>xrich text</v></c></row><row r="4"><c r="A4"><f t="shared" si="0"/><v>6</v></c></row><row r="5"><c r="A5"><f t="shared" si="0"/><v>12</v></c><c r="XFD5"><v>-1E-300</v></c></row></sheetData></worksheet>',
}
with zipfile.ZipFile(out + "/hand_made.xlsx", "w", zipfile.ZIP_DEFLATED) as z:
    for name, text in parts.items():
        z.writestr(name, text)
