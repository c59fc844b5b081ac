#pragma once
/// @file course/csv.hpp
/// @brief The `--csv FILE` some chapters write for the course site's plots (chapter 00).
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace decodebook {

/// A CSV file being written: opened with its header line, closed with a check that every byte
/// reached the disk. Introduced in chapter 00.
class CsvFile {
public:
    /// Open `path` and write `header` (e.g. "step,context_length,milliseconds,token").
    /// @throws Error when the file cannot be created.
    CsvFile(const std::string& path, const std::string& header);
    /// The stream to write rows to.
    std::ofstream& out() { return out_; }
    /// Flush and check. @throws Error when writing failed (a full disk, say).
    void close();

private:
    std::string path_;
    std::ofstream out_;
};

/// Points of a plot's series, as chapters 07 and 08 collect them for `--csv`: a series' name and
/// one (x, y). Introduced in chapter 07.
using SeriesRows = std::vector<std::pair<std::string, std::pair<double, double>>>;

/// Write `rows` to `path` under the header `columns` ("series,x,y"), one line per point.
/// Introduced in chapter 07.
/// @throws Error when the file cannot be created or written.
void write_series_csv(const std::string& path, const std::string& columns, const SeriesRows& rows);

/// One labelled point of a plot, as chapters 09 and 10 collect them for `--csv` (columns
/// series,x,y,label). Introduced in chapter 09.
struct LabelledRow {
    std::string series;  ///< the plot's series
    double x = 0;        ///< its x
    double y = 0;        ///< its y
    std::string label;   ///< text shown beside the point (quoted in the file)
};
/// A plot's labelled points. Introduced in chapter 09.
using LabelledRows = std::vector<LabelledRow>;

/// Write `rows` to `path` under the header `columns` ("series,x,y,label"), the label quoted.
/// Introduced in chapter 09.
/// @throws Error when the file cannot be created or written.
void write_labelled_csv(const std::string& path, const std::string& columns, const LabelledRows& rows);

/// A CSV field: the text in double quotes, inner quotes doubled. Introduced in chapter 02.
std::string csv_quoted(const std::string& text);

}  // namespace decodebook
