#pragma once
/// @file course/csv.hpp
/// @brief The `--csv FILE` some chapters write for the course site's plots (chapter 00).
#include <fstream>
#include <string>

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

/// A CSV field: the text in double quotes, inner quotes doubled. Introduced in chapter 02.
std::string csv_quoted(const std::string& text);

}  // namespace decodebook
