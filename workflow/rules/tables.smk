# Key tables shown as tables in the report, not only as CSV downloads: a result declared
# ``result(..., as_table=True)`` (common.smk) is also written as <csv>.html by this one rule, in
# the CSV's report category with its labels (result "... (table)"; headatlas.report.tablepages). The
# CSV stays the data.
from headatlas.report.tablepages import TablePages

TABLES = TablePages(TABLE_PAGES)


rule table_page:
    input:
        table="{table}.csv",
        code=code("table_page.py"),
    output:
        table_page_entry("{table}.csv.html"),
    log:
        logs("tables/{table}"),
    benchmark:
        benchmarks("tables/{table}")
    conda:
        ENV
    params:
        title=TABLES.title,
    script:
        "../scripts/table_page.py"
